package headgate

import "context"

// DeleteWorkerDeployment deletes a worker deployment, decodable or not. existed reports
// whether there was one; deployment is what was stored, nil when it was undecodable.
func (s *Store) DeleteWorkerDeployment(ctx context.Context, name string) (existed bool, deployment *WorkerDeployment, err error) {
	if err := validateRequired("name", name, true); err != nil {
		return false, nil, err
	}
	reply, err := s.run(ctx, scriptWfDeleteWorkerDeployment, name, name)
	if err != nil || asInt(reply, 0) == 0 {
		return false, nil, err
	}
	d, decodeErr := decodeDeployment(name, asString(reply, 1))
	if decodeErr != nil {
		return true, nil, nil // an undecodable row is deleted all the same
	}
	return true, d, nil
}

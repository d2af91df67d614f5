package headgate

import "context"

// SetDesiredState changes a worker deployment's desired state and returns it as stored:
// nil when there is no such deployment, *UndecodableError (nothing written) when its row
// is undecodable. A deployment already in that state is returned unchanged, its
// DesiredChangedAt still the time it entered the state.
func (s *Store) SetDesiredState(ctx context.Context, name string, desired DesiredState) (*WorkerDeployment, error) {
	if err := validateRequired("name", name, true); err != nil {
		return nil, err
	}
	if err := validateDesired(desired); err != nil {
		return nil, err
	}
	reply, err := s.run(ctx, scriptWfSetDesiredState, name, name, string(desired))
	if err != nil || asInt(reply, 0) == 0 {
		return nil, err
	}
	return decodeDeployment(name, asString(reply, 1))
}

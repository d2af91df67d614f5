package headgate

import "context"

// WriteRawWorkerDeployment stores bytes as a worker deployment's row, bypassing its
// encoding: for tests of how listings, puts and deletes treat a poisoned row.
func (s *Store) WriteRawWorkerDeployment(ctx context.Context, name string, raw []byte) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfWriteRawWorkerDeployment, name, name, raw)
	return err
}

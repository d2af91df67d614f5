package headgate

import "context"

// PutPackageRoute routes a workflow type to a content hash: new runs of the type start
// on it.
func (s *Store) PutPackageRoute(ctx context.Context, workflowType, contentHash string) error {
	if err := validatePackageKey(workflowType, contentHash); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfPutPackageRoute, workflowType, workflowType, contentHash)
	return err
}

package headgate

import "context"

// PutPackageRoute routes a workflow type to a content hash: new runs of the type start
// on it. The hash is a package version (ValidateVersion: at most MaxVersionBytes, no
// brace or control character); anything else is an *InvalidError and nothing is written.
func (s *Store) PutPackageRoute(ctx context.Context, workflowType, contentHash string) error {
	if err := validateRequired("WorkflowType", workflowType, true); err != nil {
		return err
	}
	if err := ValidateVersion("ContentHash", contentHash); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfPutPackageRoute, workflowType, workflowType, contentHash)
	return err
}

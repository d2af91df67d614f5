package headgate

import "context"

// DeletePackage deletes a package record and reports whether it existed. Routes to its
// content hash stay.
func (s *Store) DeletePackage(ctx context.Context, workflowType, contentHash string) (bool, error) {
	if err := validatePackageKey(workflowType, contentHash); err != nil {
		return false, err
	}
	reply, err := s.run(ctx, scriptWfDeletePackage, workflowType, workflowType, contentHash)
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}

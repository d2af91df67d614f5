package headgate

import "context"

// RemoveWorkloop deletes a workloop and reports whether it existed.
func (s *Store) RemoveWorkloop(ctx context.Context, loopID string) (bool, error) {
	if err := validateRequired("loopID", loopID, true); err != nil {
		return false, err
	}
	reply, err := s.run(ctx, scriptWfRemoveWorkloop, loopID, loopID)
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}

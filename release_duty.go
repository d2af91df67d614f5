package headgate

import (
	"context"
)

// ReleaseDuty gives the duty up if holder has it; a duty key that is not a hash is held
// by nobody and left alone.
func (s *Store) ReleaseDuty(ctx context.Context, name, holder string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptReleaseDuty, "", name, holder)
	return err
}

package headgate

import (
	"context"
)

// ReleaseDuty gives the duty up if holder has it.
func (s *Store) ReleaseDuty(ctx context.Context, name, holder string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptReleaseDuty, "", name, holder)
	return err
}

package headgate

import (
	"context"
)

// Cancel moves an unfinished job to cancelled. A running holder's later ack is
// rejected. Returns ErrJobNotFound or *NotCancellableError when it cannot.
func (s *Store) Cancel(ctx context.Context, id string) error {
	if err := validateRequired("id", id, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptCancel, id, id)
	return err
}

package headgate

import (
	"context"
)

// SetEnqueueLimit bounds the queue's unfinished jobs: enqueues that would pass limit are
// refused with *BackpressureError. Lowering it below the current depth refuses new work
// until jobs finish.
func (s *Store) SetEnqueueLimit(ctx context.Context, queue string, limit int64) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	if limit < 0 {
		return invalid("limit", "cannot be negative (%d)", limit)
	}
	return outOfMemory("set enqueue limit", s.rdb.HSet(ctx, s.keys.Limits(), queue, limit).Err())
}

// RemoveEnqueueLimit makes the queue unbounded.
func (s *Store) RemoveEnqueueLimit(ctx context.Context, queue string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	return s.rdb.HDel(ctx, s.keys.Limits(), queue).Err()
}

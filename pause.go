package headgate

import (
	"context"
)

// PauseQueue stops admission from the queue; enqueues still succeed.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	return s.rdb.SAdd(ctx, s.keys.Paused(), queue).Err()
}

// ResumeQueue resumes admission from a paused queue.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	if err := s.rdb.SRem(ctx, s.keys.Paused(), queue).Err(); err != nil {
		return err
	}
	return s.rdb.RPush(ctx, s.keys.Wake(queue), "1").Err()
}

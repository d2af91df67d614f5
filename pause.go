package headgate

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// PauseQueue stops admission from the queue; enqueues still succeed.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	return outOfMemory("pause", s.rdb.SAdd(ctx, s.keys.Paused(), queue).Err())
}

// ResumeQueue resumes admission from a paused queue.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	// One transaction: a Redis out of memory refuses the wake-up, and then the resume
	// too, rather than resume the queue and report a failure.
	cmds, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, s.keys.Paused(), queue)
		p.RPush(ctx, s.keys.Wake(queue), "1")
		return nil
	})
	return outOfMemory("resume", err, cmds...)
}

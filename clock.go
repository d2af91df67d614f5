package headgate

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Now returns the store time: the frozen time when a test froze it, else Redis's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	v, err := s.rdb.Get(ctx, s.keys.Clock()).Int64()
	if err == nil {
		return time.UnixMilli(v), nil
	}
	if !errors.Is(err, redis.Nil) {
		return time.Time{}, err
	}
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, err
	}
	return t.Truncate(time.Millisecond), nil
}

// FreezeClock stops the namespace's store clock at t: every script reads it.
func (s *Store) FreezeClock(ctx context.Context, t time.Time) error {
	if t.UnixMilli() < 0 {
		return invalid("t", "is before 1970")
	}
	return s.rdb.Set(ctx, s.keys.Clock(), t.UnixMilli(), 0).Err()
}

// AdvanceClock steps the store clock forward by d, freezing it at now+d first if it was
// running.
func (s *Store) AdvanceClock(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return invalid("d", "cannot step the clock back (%s)", d)
	}
	now, err := s.Now(ctx)
	if err != nil {
		return err
	}
	return s.FreezeClock(ctx, now.Add(d))
}

// UnfreezeClock lets the store clock follow Redis's clock again.
func (s *Store) UnfreezeClock(ctx context.Context) error {
	return s.rdb.Del(ctx, s.keys.Clock()).Err()
}

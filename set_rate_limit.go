package headgate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateLimit is a fleet-wide token bucket: Limit tokens per Window, holding at most Burst.
type RateLimit struct {
	Limit  int64
	Window time.Duration
	Burst  int64
}

// SetRateLimit configures a rate class, starting full. Admission charges a job's weight
// to its class; a class without a limit is unlimited. It rewrites the whole bucket, so
// it also replaces a corrupt one.
func (s *Store) SetRateLimit(ctx context.Context, class string, rl RateLimit) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("class", class, true); err != nil {
		return err
	}
	switch {
	case rl.Limit < 0:
		return invalid("Limit", "cannot be negative (%d)", rl.Limit)
	case rl.Window < time.Millisecond:
		return invalid("Window", "must be at least 1ms, not %s", rl.Window)
	case rl.Burst <= 0:
		return invalid("Burst", "must be positive, not %d", rl.Burst)
	}
	_, err := s.run(ctx, scriptSetRateLimit, "", class, rl.Limit, ms(rl.Window), rl.Burst)
	return err
}

// RemoveRateLimit makes the class unlimited; jobs it parked for lack of tokens are due
// for admission again.
func (s *Store) RemoveRateLimit(ctx context.Context, class string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("class", class, true); err != nil {
		return err
	}
	cmds, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.keys.Rate(class))
		p.ZAddXX(ctx, s.keys.Starved(), redis.Z{Score: 0, Member: class})
		return nil
	})
	return outOfMemory("remove rate limit", err, cmds...)
}

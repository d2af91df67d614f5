package headgate

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Gauges is a namespace's state as a metrics scrape reads it.
type Gauges struct {
	// Now is the store time of the read.
	Now time.Time
	// Queues are the stats of every queue that has had a job or a setting (QueueStats).
	Queues []QueueStats
	// QuarantinedFingerprints counts the fingerprints in quarantine.
	QuarantinedFingerprints int64
	// RateTokens are the tokens each configured rate class of those asked for holds at
	// Now, refilled as admission would refill them; classes without a limit are absent.
	RateTokens map[string]float64
}

// Gauges reads what a metrics scrape exports, with plain reads and no script: the
// per-queue counts the scripts keep, the paused set, the limits, the quarantine's size
// and the buckets of rateClasses. It sends 6 + queues + rate classes commands in five
// round trips, however many jobs the namespace holds.
func (s *Store) Gauges(ctx context.Context, rateClasses []string) (*Gauges, error) {
	for _, c := range rateClasses {
		if err := validateRequired("rateClasses", c, true); err != nil {
			return nil, err
		}
	}
	queues, err := s.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	quarantined := pipe.HLen(ctx, s.keys.Quarantine())
	clock := pipe.Get(ctx, s.keys.Clock())
	redisTime := pipe.Time(ctx)
	buckets := make([]*redis.SliceCmd, len(rateClasses))
	for i, c := range rateClasses {
		buckets[i] = pipe.HMGet(ctx, s.keys.Rate(c), "tokens", "burst", "limit", "window", "refilled")
	}
	_, _ = pipe.Exec(ctx) // each command's error is checked below: a nil clock is no error
	if err := quarantined.Err(); err != nil {
		return nil, err
	}
	g := &Gauges{Queues: queues, QuarantinedFingerprints: quarantined.Val(), RateTokens: map[string]float64{}}
	switch ms, err := clock.Int64(); {
	case err == nil:
		g.Now = time.UnixMilli(ms)
	case !errors.Is(err, redis.Nil):
		return nil, err
	case redisTime.Err() != nil:
		return nil, redisTime.Err()
	default:
		g.Now = redisTime.Val().Truncate(time.Millisecond)
	}
	for i, c := range rateClasses {
		if err := buckets[i].Err(); err != nil {
			return nil, err
		}
		v := buckets[i].Val()
		if len(v) != 5 || v[1] == nil {
			continue
		}
		g.RateTokens[c] = bucketTokens(v, g.Now.UnixMilli())
	}
	return g, nil
}

// bucketTokens is load_bucket of lua/lib.lua: the tokens a bucket {tokens, burst, limit,
// window, refilled} holds at now (ms) once lazily refilled.
func bucketTokens(v []any, now int64) float64 {
	f := func(i int) float64 {
		s, _ := v[i].(string)
		n, _ := strconv.ParseFloat(s, 64)
		return n
	}
	tokens, burst, limit, window, refilled := f(0), f(1), f(2), f(3), f(4)
	if tokens >= burst || limit <= 0 || window <= 0 || float64(now) <= refilled {
		return math.Min(tokens, burst)
	}
	gained := math.Floor((float64(now) - refilled) * limit / window)
	return math.Min(burst, tokens+gained)
}

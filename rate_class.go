package headgate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateClassState is a rate class as an operator reads it: its limit, what its bucket
// holds now, and what it has set aside.
type RateClassState struct {
	Class string
	// Limit is the class's token bucket; nil when the class is unlimited (never
	// configured, or removed).
	Limit *RateLimit
	// Tokens is what the bucket holds at At, refilled as admission would refill it.
	Tokens float64
	// At is the store time of the read.
	At time.Time
	// Parked counts the available jobs of the class admission set aside, for lack of
	// tokens or because they weigh more than the burst.
	Parked int64
	// RateLimited counts every job admission set aside for the class so far (the event
	// counter of headgate_rate_limited_total).
	RateLimited int64
}

// RateClass reads one rate class with plain reads (no script), in one round trip.
func (s *Store) RateClass(ctx context.Context, class string) (*RateClassState, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if err := validateRequired("class", class, true); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	bucket := pipe.HMGet(ctx, s.keys.Rate(class), "tokens", "burst", "limit", "window", "refilled")
	parked := pipe.ZCard(ctx, s.keys.Parked(class))
	counted := pipe.HGet(ctx, s.keys.Counters(), "rate_limited:"+class)
	clock := pipe.Get(ctx, s.keys.Clock())
	redisTime := pipe.Time(ctx)
	_, _ = pipe.Exec(ctx) // each command's error is checked below: nil replies are no error
	for _, err := range []error{bucket.Err(), parked.Err(), counted.Err()} {
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	at, err := pipedNow(clock, redisTime)
	if err != nil {
		return nil, err
	}
	st := &RateClassState{Class: class, Parked: parked.Val(), At: at}
	st.RateLimited, _ = strconv.ParseInt(counted.Val(), 10, 64)
	v := bucket.Val()
	if len(v) != 5 || v[1] == nil {
		return st, nil
	}
	field := func(i int) int64 {
		s, _ := v[i].(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	st.Limit = &RateLimit{Limit: field(2), Window: time.Duration(field(3)) * time.Millisecond, Burst: field(1)}
	st.Tokens = bucketTokens(v, st.At.UnixMilli())
	return st, nil
}

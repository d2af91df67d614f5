package headgate

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
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
	// Events are the totals the scripts count (EventCounts).
	Events EventCounts
	// Waits are, by queue, what the queue's next partitions in turn order wait for
	// (QueueWaits); queues without available work are absent.
	Waits map[string]QueueWaits
}

// EventCounts are the totals of events the scripts count as they happen, since the
// namespace's first one: monotonic, fleet-wide, kept in Redis (keys.Counters).
type EventCounts struct {
	// LeaseRejections counts writes of a worker (ack, renew, checkpoint, output,
	// progress) refused because it no longer held the job's lease.
	LeaseRejections int64
	// Reclaims counts jobs whose lease expired and that ReclaimExpired took back.
	Reclaims int64
	// RateLimited counts, by rate class, the jobs admission set aside because the class
	// lacked the tokens to pay for them.
	RateLimited map[string]int64
	// BackpressureRejections counts, by queue, the enqueue calls refused because the
	// queue was at its enqueue limit.
	BackpressureRejections map[string]int64
	// Completed counts, by queue, the jobs acked as a success.
	Completed map[string]int64
	// Failed counts, by queue, the attempts that failed: acked as a retry (retryable or
	// archived after it), a snooze past the policy's limit or an undecodable payload, and
	// the leases ReclaimExpired took back (also counted in Reclaims). A skip is neither.
	Failed map[string]int64
}

// QueueWaits is how long a queue's available work has waited, read from the first
// partitions of its admission ring (the ones admitted next), each by the job it admits
// next. Jobs pinned to a worker, held or parked by their rate class are not looked at.
type QueueWaits struct {
	// Partitions counts the partitions with unpinned available work.
	Partitions int64
	// Oldest is the longest wait of the partitions read (Wait's largest value): the
	// queue's oldest available job when Partitions <= the number read and priorities are
	// equal.
	Oldest time.Duration
	// Wait is, by partition, how long the job the partition admits next has been due,
	// for at most GaugesOptions.Partitions partitions.
	Wait map[string]time.Duration
}

// GaugesOptions selects what Store.Gauges reads beyond the fixed set.
type GaugesOptions struct {
	// RateClasses are the classes whose tokens are read: the store keeps no list of them.
	RateClasses []string
	// Partitions is the most partitions per queue whose wait is read (Gauges.Waits);
	// 0 reads none.
	Partitions int
}

// Gauges reads what a metrics scrape exports, with plain reads and no script: the
// per-queue counts the scripts keep, the paused set, the limits, the quarantine's size,
// the event counters, the buckets of the rate classes asked for, and the head job of the
// first partitions of each queue's ring. It sends 8 + 2 x queues + rate classes commands
// (the live workers of each queue are counted, as QueueStats does), and with Partitions
// 2 more per queue and 1 per partition read, however many jobs the namespace holds.
func (s *Store) Gauges(ctx context.Context, opts *GaugesOptions) (*Gauges, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &GaugesOptions{}
	}
	for _, c := range opts.RateClasses {
		if err := validateRequired("RateClasses", c, true); err != nil {
			return nil, err
		}
	}
	if opts.Partitions < 0 || opts.Partitions > maxGaugePartitions {
		return nil, invalid("Partitions", "is %d, outside 0..%d", opts.Partitions, maxGaugePartitions)
	}
	queues, err := s.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	quarantined := pipe.HLen(ctx, s.keys.Quarantine())
	clock := pipe.Get(ctx, s.keys.Clock())
	redisTime := pipe.Time(ctx)
	counters := pipe.HGetAll(ctx, s.keys.Counters())
	buckets := make([]*redis.SliceCmd, len(opts.RateClasses))
	for i, c := range opts.RateClasses {
		buckets[i] = pipe.HMGet(ctx, s.keys.Rate(c), "tokens", "burst", "limit", "window", "refilled")
	}
	rings := make([]*redis.IntCmd, len(queues))
	heads := make([]*redis.StringSliceCmd, len(queues))
	if opts.Partitions > 0 {
		for i, q := range queues {
			rings[i] = pipe.ZCard(ctx, s.keys.Ring(q.Queue))
			heads[i] = pipe.ZRange(ctx, s.keys.Ring(q.Queue), 0, int64(opts.Partitions-1))
		}
	}
	_, _ = pipe.Exec(ctx) // each command's error is checked below: a nil clock is no error
	if err := quarantined.Err(); err != nil {
		return nil, err
	}
	if err := counters.Err(); err != nil {
		return nil, err
	}
	g := &Gauges{Queues: queues, QuarantinedFingerprints: quarantined.Val(), RateTokens: map[string]float64{},
		Events: eventCounts(counters.Val()), Waits: map[string]QueueWaits{}}
	if g.Now, err = pipedNow(clock, redisTime); err != nil {
		return nil, err
	}
	for i, c := range opts.RateClasses {
		if err := buckets[i].Err(); err != nil {
			return nil, err
		}
		v := buckets[i].Val()
		if len(v) != 5 || v[1] == nil {
			continue
		}
		g.RateTokens[c] = bucketTokens(v, g.Now.UnixMilli())
	}
	if opts.Partitions > 0 {
		if err := s.readWaits(ctx, g, rings, heads); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// pipedNow is the store time from a pipelined GET of the clock key and TIME: the frozen
// clock when a test set one, else Redis's (Store.Now's rule).
func pipedNow(clock *redis.StringCmd, redisTime *redis.TimeCmd) (time.Time, error) {
	switch ms, err := clock.Int64(); {
	case err == nil:
		return time.UnixMilli(ms), nil
	case !errors.Is(err, redis.Nil):
		return time.Time{}, err
	case redisTime.Err() != nil:
		return time.Time{}, redisTime.Err()
	}
	return redisTime.Val().Truncate(time.Millisecond), nil
}

// maxGaugePartitions bounds GaugesOptions.Partitions, and so a scrape's label count.
const maxGaugePartitions = 1000

// readWaits fills g.Waits from each queue's ring size and first partitions: one more
// round trip reads the first member (the next job) of each partition read.
func (s *Store) readWaits(ctx context.Context, g *Gauges, rings []*redis.IntCmd, heads []*redis.StringSliceCmd) error {
	pipe := s.rdb.Pipeline()
	next := make([][]*redis.StringSliceCmd, len(g.Queues))
	for i, q := range g.Queues {
		if err := cmp.Or(rings[i].Err(), heads[i].Err()); err != nil {
			return err
		}
		for _, part := range heads[i].Val() {
			next[i] = append(next[i], pipe.ZRange(ctx, s.keys.Partition(q.Queue, part), 0, 0))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for i, q := range g.Queues {
		if rings[i].Val() == 0 {
			continue
		}
		w := QueueWaits{Partitions: rings[i].Val(), Wait: map[string]time.Duration{}}
		for j, part := range heads[i].Val() {
			member := next[i][j].Val()
			if len(member) == 0 {
				continue
			}
			due, ok := rankDue(member[0])
			if !ok {
				continue
			}
			wait := max(g.Now.Sub(time.UnixMilli(due)), 0)
			w.Wait[part] = wait
			w.Oldest = max(w.Oldest, wait)
		}
		g.Waits[q.Queue] = w
	}
	return nil
}

// rankWidth is RANK_WIDTH of lua/lib.lua: a partition member is 4 bytes of inverted
// priority and 7 of due time (ms), big-endian, then the job id; legacyRankWidth is
// LEGACY_RANK_WIDTH, of members written before: 10 digits of inverted priority, 15 of
// due time. A legacy rank's 5th byte is a digit, a binary rank's is below 32.
const (
	rankWidth       = 11
	legacyRankWidth = 25
)

// rankDue is the due time (ms) in a partition member's rank, of either kind; false when
// the member does not parse.
func rankDue(m string) (int64, bool) {
	if len(m) >= legacyRankWidth && m[4] >= '0' {
		due, err := strconv.ParseInt(m[legacyRankWidth-15:legacyRankWidth], 10, 64)
		return due, err == nil
	}
	if len(m) < rankWidth || m[4] >= '0' {
		return 0, false
	}
	var due int64
	for _, b := range []byte(m[4:rankWidth]) {
		due = due<<8 | int64(b)
	}
	return due, true
}

// eventCounts parses the counters hash (lua/lib.lua count_event).
func eventCounts(h map[string]string) EventCounts {
	e := EventCounts{RateLimited: map[string]int64{}, BackpressureRejections: map[string]int64{},
		Completed: map[string]int64{}, Failed: map[string]int64{}}
	for f, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch name, arg, _ := strings.Cut(f, ":"); name {
		case "lease_rejected":
			e.LeaseRejections = n
		case "reclaimed":
			e.Reclaims = n
		case "rate_limited":
			e.RateLimited[arg] = n
		case "backpressure":
			e.BackpressureRejections[arg] = n
		case "completed":
			e.Completed[arg] = n
		case "failed":
			e.Failed[arg] = n
		}
	}
	return e
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

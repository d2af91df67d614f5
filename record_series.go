package headgate

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SeriesGapDefault is the least time between two samples of a queue's throughput series
// that RecordSeries takes when given none: a sample a minute.
const SeriesGapDefault = time.Minute

// SeriesKeep is the most samples a queue's throughput series keeps: two hours at one a
// minute, so the last hour's deltas are whole even when samples come late.
const SeriesKeep = 120

// RecordSeries snapshots every queue's outcome counters (the jobs acked as completed and
// the attempts acked as failed, EventCounts.Completed and Failed) into the queue's
// throughput series, skipping a queue whose newest sample is less than gap old (0:
// SeriesGapDefault), and returns how many queues it sampled. One script call, whatever
// the number of jobs; a worker's series duty calls it once a minute. Each series keeps
// its newest SeriesKeep samples. The queues are those the namespace lists (one SMEMBERS
// before the script): a queue whose first job comes later is sampled next time.
func (s *Store) RecordSeries(ctx context.Context, gap time.Duration) (int, error) {
	if err := s.checkFormat(ctx); err != nil {
		return 0, err
	}
	if gap < 0 {
		return 0, invalid("gap", "is %s, less than zero", gap)
	}
	if gap == 0 {
		gap = SeriesGapDefault
	}
	queues, err := s.rdb.SMembers(ctx, s.keys.Queues()).Result()
	if err != nil {
		return 0, err
	}
	slices.Sort(queues)
	args := []any{max(ms(gap), 1), SeriesKeep, len(queues)}
	for _, q := range queues {
		args = append(args, q)
	}
	reply, err := s.run(ctx, scriptRecordSeries, "", args...)
	if err != nil {
		return 0, err
	}
	return int(asInt(reply, 0)), nil
}

// SeriesSample is one snapshot of a queue's outcome counters.
type SeriesSample struct {
	// At is the store time of the snapshot.
	At time.Time
	// Completed and Failed are the queue's counters then: totals since the namespace's
	// first ack, so the change between two samples is what happened between them.
	Completed, Failed int64
	// Live marks the sample Series adds last: the counters at the store's now, not a
	// recorded sample.
	Live bool
}

// Since is what the queue completed and failed between prev and s. A counter lower
// than prev's was reset (its key deleted) and counted again from zero.
func (s SeriesSample) Since(prev SeriesSample) (completed, failed int64) {
	grown := func(a, b int64) int64 {
		if b < a {
			return b
		}
		return b - a
	}
	return grown(prev.Completed, s.Completed), grown(prev.Failed, s.Failed)
}

// Series returns the throughput series of each queue asked for, oldest sample first
// (absent for a queue with none): one ZRANGEBYSCORE per queue from since, in one round
// trip. A member that does not parse is left out. A queue's last sample is its counters
// as they are now, at the store time (when that is after its newest recorded sample):
// what the current minute did counts before the series duty samples it.
func (s *Store) Series(ctx context.Context, since time.Time, queues ...string) (map[string][]SeriesSample, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	for _, q := range queues {
		if err := validateRequired("queue", q, false); err != nil {
			return nil, err
		}
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(queues))
	from := strconv.FormatInt(since.UnixMilli(), 10)
	fields := make([]string, 0, 2*len(queues))
	for i, q := range queues {
		cmds[i] = pipe.ZRangeByScore(ctx, s.keys.Series(q), &redis.ZRangeBy{Min: from, Max: "+inf"})
		fields = append(fields, "completed:"+q, "failed:"+q)
	}
	if len(queues) == 0 {
		return map[string][]SeriesSample{}, nil
	}
	counters := pipe.HMGet(ctx, s.keys.Counters(), fields...)
	clock := pipe.Get(ctx, s.keys.Clock())
	redisTime := pipe.Time(ctx)
	_, _ = pipe.Exec(ctx) // each command's error is checked below: a nil clock is no error
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return nil, err
		}
	}
	if err := counters.Err(); err != nil {
		return nil, err
	}
	now, err := pipedNow(clock, redisTime)
	if err != nil {
		return nil, err
	}
	live := counters.Val()
	count := func(v any) int64 { // a counter never counted is nil: 0
		str, _ := v.(string)
		n, _ := strconv.ParseInt(str, 10, 64)
		return n
	}
	out := map[string][]SeriesSample{}
	for i, q := range queues {
		var samples []SeriesSample
		for _, m := range cmds[i].Val() {
			if sm, ok := parseSeriesMember(m); ok {
				samples = append(samples, sm)
			}
		}
		slices.SortStableFunc(samples, func(a, b SeriesSample) int { return a.At.Compare(b.At) })
		if len(samples) > 0 && now.After(samples[len(samples)-1].At) {
			samples = append(samples, SeriesSample{At: now, Completed: count(live[2*i]), Failed: count(live[2*i+1]), Live: true})
		}
		if len(samples) > 0 {
			out[q] = samples
		}
	}
	return out, nil
}

// parseSeriesMember reads "<ms>:<completed>:<failed>" (lua/record_series.lua).
func parseSeriesMember(m string) (SeriesSample, bool) {
	parts := strings.Split(m, ":")
	if len(parts) != 3 {
		return SeriesSample{}, false
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return SeriesSample{}, false
		}
		n[i] = v
	}
	return SeriesSample{At: time.UnixMilli(n[0]), Completed: n[1], Failed: n[2]}, true
}

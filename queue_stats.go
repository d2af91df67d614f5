package headgate

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// QueueStats is a queue's state at one moment.
type QueueStats struct {
	Queue string
	// Counts is the number of jobs in each state, except the held ones.
	Counts map[State]int64
	// Held counts available jobs set aside because their fingerprint is quarantined;
	// they are not in Counts[StateAvailable] and return to it when an operator releases
	// the fingerprint. Admission sets a job aside when it reaches it: a sibling that was
	// waiting when the fingerprint was quarantined is counted available until then.
	Held int64
	// Unrunnable counts the available jobs (a part of Counts[StateAvailable]) heavier
	// than their rate class's burst: they cannot be admitted at the class's current limit,
	// are parked aside so they block nothing, and are looked at again when SetRateLimit
	// or RemoveRateLimit changes the class.
	Unrunnable int64
	// Unfinished counts jobs not yet terminal (what an enqueue limit bounds), held ones
	// included.
	Unfinished int64
	// Limit is the queue's enqueue limit; nil when unbounded.
	Limit  *int64
	Paused bool
	// LiveWorkers counts the live workers that serve the queue (their heartbeats).
	LiveWorkers int64
	// Unserved is whether the queue has work (unfinished jobs that are not staged) and
	// no live worker serves it.
	Unserved bool
}

// Fields of the counts HASH (keys.Counts) besides the states: "held" jobs are available
// jobs counted apart from "available"; "unrunnable" ones are counted in it as well.
const (
	countHeld       = "held"
	countUnrunnable = "unrunnable"
)

// QueueStats returns the stats of every queue that has had a job or a setting, by name.
func (s *Store) QueueStats(ctx context.Context) ([]QueueStats, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	queues, err := s.rdb.SMembers(ctx, s.keys.Queues()).Result()
	if err != nil {
		return nil, err
	}
	limits, err := s.rdb.HGetAll(ctx, s.keys.Limits()).Result()
	if err != nil {
		return nil, err
	}
	paused, err := s.rdb.SMembers(ctx, s.keys.Paused()).Result()
	if err != nil {
		return nil, err
	}
	for q := range limits {
		queues = append(queues, q)
	}
	queues = append(queues, paused...)
	slices.Sort(queues)
	queues = slices.Compact(queues)
	// The live workers of each queue go in the same round trip as its counts: a worker
	// is live while its entry's score (live until, ms) is past the store's now.
	var after string
	if len(queues) > 0 {
		now, err := s.Now(ctx)
		if err != nil {
			return nil, err
		}
		after = fmt.Sprintf("(%d", now.UnixMilli())
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(queues))
	live := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.HGetAll(ctx, s.keys.Counts(q))
		live[i] = pipe.ZCount(ctx, s.keys.QueueWorkers(q), after, "+inf")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]QueueStats, len(queues))
	for i, q := range queues {
		st := QueueStats{Queue: q, Counts: map[State]int64{}, Paused: slices.Contains(paused, q), LiveWorkers: live[i].Val()}
		for f, v := range cmds[i].Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			switch {
			case n == 0:
				continue
			case f == countHeld:
				st.Held = n
				st.Unfinished += n
				continue
			case f == countUnrunnable:
				st.Unrunnable = n
				continue
			}
			st.Counts[State(f)] = n
			if !State(f).Terminal() {
				st.Unfinished += n
			}
		}
		if v, ok := limits[q]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			st.Limit = &n
		}
		st.Unserved = st.LiveWorkers == 0 && st.Unfinished-st.Counts[StatePending] > 0
		out[i] = st
	}
	return out, nil
}

package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// GetSchedule returns a schedule with its state, or ErrScheduleNotFound.
func (s *Store) GetSchedule(ctx context.Context, name string) (*ScheduleState, error) {
	if err := validateRequired("name", name, true); err != nil {
		return nil, err
	}
	states, err := s.readSchedules(ctx, []string{name})
	if err != nil {
		return nil, err
	}
	if states[0] == nil {
		return nil, fmt.Errorf("%w: %q", ErrScheduleNotFound, name)
	}
	return states[0], nil
}

// ListSchedules returns up to limit schedules in name order, starting after the name
// cursor ("" = from the first), and the cursor of the next page ("" = no more).
func (s *Store) ListSchedules(ctx context.Context, cursor string, limit int) ([]*ScheduleState, string, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, "", err
	}
	if limit < 1 || limit > MaxBatch {
		return nil, "", invalid("limit", "is %d, outside 1..%d", limit, MaxBatch)
	}
	min := "-"
	if cursor != "" {
		min = "(" + cursor
	}
	names, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.keys.Schedules(), Start: min, Stop: "+", ByLex: true,
		Count: int64(limit) + 1}).Result()
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(names) > limit {
		names = names[:limit]
		next = names[limit-1]
	}
	states, err := s.readSchedules(ctx, names)
	if err != nil {
		return nil, "", err
	}
	out := make([]*ScheduleState, 0, len(states))
	for _, st := range states {
		if st != nil { // removed between the two reads
			out = append(out, st)
		}
	}
	return out, next, nil
}

// readSchedules reads schedules in one round trip; nil for a name that has none.
func (s *Store) readSchedules(ctx context.Context, names []string) ([]*ScheduleState, error) {
	pipe := s.rdb.Pipeline()
	hashes := make([]*redis.MapStringStringCmd, len(names))
	dues := make([]*redis.FloatCmd, len(names))
	for i, n := range names {
		hashes[i] = pipe.HGetAll(ctx, s.keys.Schedule(n))
		dues[i] = pipe.ZScore(ctx, s.keys.SchedulesDue(), n)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*ScheduleState, len(names))
	for i, n := range names {
		h := hashes[i].Val()
		if len(h) == 0 {
			continue
		}
		st, err := scheduleFromHash(n, h)
		if err != nil {
			return nil, err
		}
		if due, err := dues[i].Result(); err == nil {
			st.NextDue = fromMs(int64(due))
			// A definition that no longer parses has no ticks to show; its fire reports it.
			if k, err := st.tickerOf(); err == nil {
				st.NextTick = k.next(st.Mark)
			}
		}
		out[i] = st
	}
	return out, nil
}

func scheduleFromHash(name string, h map[string]string) (*ScheduleState, error) {
	sc, err := decodeScheduleDef(name, h["def"])
	if err != nil {
		return nil, err
	}
	i64 := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	st := &ScheduleState{
		Schedule:        sc,
		Paused:          h["paused"] == "1",
		Created:         fromMs(i64("created")),
		Updated:         fromMs(i64("updated")),
		Revision:        i64("rev"),
		Mark:            fromMs(i64("mark")),
		Fired:           i64("fired"),
		Skipped:         i64("skipped"),
		Refused:         i64("refused"),
		Runs:            i64("runs"),
		LastTick:        fromMs(i64("last_tick")),
		LastJobID:       h["last_job"],
		LastSkippedTick: fromMs(i64("last_skipped")),
		LastRefusedTick: fromMs(i64("last_refused")),
	}
	if r := h["last_refusal"]; r != "" {
		st.LastRefusal = refusalFromJSON(ScheduleJobID(name, st.LastRefusedTick), r).Error()
	}
	return st, nil
}

// refusalFromJSON turns the enqueue error reply a fire recorded (a JSON array) into
// the typed error it stands for.
func refusalFromJSON(jobID, text string) error {
	var v []any
	if err := json.Unmarshal([]byte(text), &v); err != nil || len(v) == 0 {
		return fmt.Errorf("headgate: refused (%s)", text)
	}
	rest := make([]any, len(v)-1)
	for i, x := range v[1:] {
		switch x := x.(type) {
		case float64:
			rest[i] = int64(x)
		default:
			rest[i] = x
		}
	}
	code, _ := v[0].(float64)
	return replyError("fire_schedule", jobID, int64(code), rest)
}

// tickerOf returns the schedule's ticker; interval ticks are anchored at Start, or at
// the schedule's creation.
func (st *ScheduleState) tickerOf() (*ticker, error) {
	_, k, err := normalizeSchedule(st.Schedule)
	if err != nil {
		return nil, &CorruptError{Key: "schedule " + st.Name, Reason: "stored definition is invalid: " + err.Error()}
	}
	k.anchor = st.Start
	if k.anchor.IsZero() {
		k.anchor = st.Created
	}
	return k, nil
}

package headgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrDutyLost: the caller's duty tenure is over (its lease expired, or another holder
// took the duty). Nothing was written; claim the duty again before firing.
var ErrDutyLost = errors.New("headgate: the duty lease is not the caller's any more")

// ScheduleMovedError: the schedule is no longer as the plan saw it (another firer
// advanced it, or it was updated, paused or resumed). Nothing was written; read it
// again and plan anew.
type ScheduleMovedError struct {
	Name     string
	Revision int64
	Mark     time.Time
	Paused   bool
}

func (e *ScheduleMovedError) Error() string {
	return fmt.Sprintf("headgate: schedule %q moved (revision %d, mark %s, paused %t); plan again",
		e.Name, e.Revision, e.Mark.UTC().Format(time.RFC3339Nano), e.Paused)
}

// DutyFence names the tenure of a duty lease a fire is made under (ClaimDutyLease).
type DutyFence struct {
	Duty   string
	Holder string
	Fence  int64
}

// TickOutcome is what a fired tick did.
type TickOutcome string

const (
	TickEnqueued TickOutcome = "enqueued" // its job was written
	TickReplayed TickOutcome = "replayed" // its job existed already (a replay: nothing written)
	TickRefused  TickOutcome = "refused"  // the namespace refused its job; Err says why
)

// TickResult is one fired tick.
type TickResult struct {
	Schedule string
	Tick     time.Time
	JobID    string
	Outcome  TickOutcome
	// Err is, for a refused tick, the error the enqueue would have returned
	// (*BackpressureError, *QuarantinedError, *DuplicateError, *IDConflictError).
	Err error
}

// PlanSchedule reads a schedule and computes what firing it at the store's now would
// do under its misfire policy. FirePlan applies the plan.
func (s *Store) PlanSchedule(ctx context.Context, name string) (*SchedulePlan, error) {
	st, err := s.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	now, err := s.Now(ctx)
	if err != nil {
		return nil, err
	}
	k, err := st.tickerOf()
	if err != nil {
		return nil, err
	}
	return k.plan(st, now), nil
}

// FirePlan fires a plan under a duty tenure, in one script: it checks the fence,
// enqueues each tick's job with the id ScheduleJobID(name, tick) and advances the
// schedule's mark. It returns ErrDutyLost when the tenure is over, *ScheduleMovedError
// when the schedule changed since the plan, ErrScheduleNotFound, and then nothing was
// written. A tick whose job the namespace refuses is counted on the schedule and
// reported in its TickResult.
func (s *Store) FirePlan(ctx context.Context, f DutyFence, p *SchedulePlan) ([]TickResult, error) {
	if err := validateRequired("duty", f.Duty, true); err != nil {
		return nil, err
	}
	if err := validateRequired("holder", f.Holder, true); err != nil {
		return nil, err
	}
	args := append(templateArgs(p.job), p.Name, f.Duty, f.Holder, f.Fence, p.Revision, unixMs(p.PrevMark),
		unixMs(p.Mark), unixMs(p.NextDue), p.Skipped, unixMs(p.LastSkipped), len(p.Ticks))
	out := make([]TickResult, len(p.Ticks))
	for i, t := range p.Ticks {
		out[i] = TickResult{Schedule: p.Name, Tick: t, JobID: ScheduleJobID(p.Name, t)}
		args = append(args, t.UnixMilli(), out[i].JobID)
	}
	reply, err := s.run(ctx, scriptFireSchedule, p.Name, args...)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Outcome = TickOutcome(asString(reply, 2*i))
		if why := asString(reply, 2*i+1); why != "" {
			out[i].Err = refusalFromJSON(out[i].JobID, why)
		}
	}
	return out, nil
}

// templateArgs is a schedule's job template as fire_schedule.lua and run_schedule.lua
// take it (ARGV[1..15]).
func templateArgs(e Envelope) []any {
	return []any{e.Kind, e.Queue, e.PartitionKey, e.Fingerprint, e.Priority, e.StickyWorker, ms(e.Retention),
		e.MaxAttempts, e.SchemaVersion, e.Weight, e.RateClass, uniqueField(&e), ms(e.UniqueWindow),
		strings.Join(e.Tags, "\n"), e.Payload}
}

// FireSchedule plans and fires one schedule under a duty tenure. When another firer
// moved the schedule between the plan and the fire, it plans once more from what that
// firer left.
func (s *Store) FireSchedule(ctx context.Context, f DutyFence, name string) ([]TickResult, error) {
	for attempt := 0; ; attempt++ {
		p, err := s.PlanSchedule(ctx, name)
		if err != nil {
			return nil, err
		}
		res, err := s.FirePlan(ctx, f, p)
		var moved *ScheduleMovedError
		if errors.As(err, &moved) && attempt == 0 {
			continue
		}
		return res, err
	}
}

// FireDueSchedules fires, under a duty tenure, up to limit schedules that are due at
// the store's now, and returns their fired ticks and when the next schedule is due
// (zero: none is). Schedules removed or paused meanwhile are passed over. A schedule
// whose stored data is unusable does not hold the others back: it is passed over too,
// and its *CorruptError is returned, with the others' results, once they are fired.
func (s *Store) FireDueSchedules(ctx context.Context, f DutyFence, limit int) ([]TickResult, time.Time, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, time.Time{}, err
	}
	if limit < 1 || limit > MaxBatch {
		return nil, time.Time{}, invalid("limit", "is %d, outside 1..%d", limit, MaxBatch)
	}
	if err := validateRequired("duty", f.Duty, true); err != nil {
		return nil, time.Time{}, err
	}
	now, err := s.Now(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	names, err := s.rdb.ZRangeByScore(ctx, s.keys.SchedulesDue(), &redis.ZRangeBy{
		Min: "-inf", Max: fmt.Sprint(now.UnixMilli()), Count: int64(limit)}).Result()
	if err != nil {
		return nil, time.Time{}, err
	}
	var out []TickResult
	var corrupt []error
	for _, n := range names {
		res, err := s.FireSchedule(ctx, f, n)
		var moved *ScheduleMovedError
		var bad *CorruptError
		switch {
		case errors.Is(err, ErrScheduleNotFound), errors.As(err, &moved):
			continue // removed, or paused, or changed twice under us: the next pass sees it
		case errors.As(err, &bad):
			corrupt = append(corrupt, fmt.Errorf("schedule %q: %w", n, err))
			continue
		case err != nil:
			return out, time.Time{}, err
		}
		out = append(out, res...)
	}
	first, err := s.rdb.ZRangeWithScores(ctx, s.keys.SchedulesDue(), 0, 0).Result()
	if err != nil {
		return out, time.Time{}, err
	}
	var next time.Time
	if len(first) > 0 {
		next = fromMs(int64(first[0].Score))
	}
	return out, next, errors.Join(corrupt...)
}

package headgate

import (
	"context"
	"time"
)

// TimerEntry is one armed durable timer.
type TimerEntry struct {
	WorkflowID string
	TimerID    string
	FireAt     time.Time // ms precision
	// ArmedSeq is the seq of the event that armed it: a re-arming at the same time by a
	// newer event is a different arming.
	ArmedSeq int64
}

// TimerRetirement is how RetireTimer ended.
type TimerRetirement string

const (
	// TimerRetired: the named arming was removed, or no arming was left.
	TimerRetired TimerRetirement = "retired"
	// TimerSuperseded: the timer was re-armed since; the new arming stays.
	TimerSuperseded TimerRetirement = "superseded"
)

func validateTimer(workflowID, timerID string, fireAt time.Time, armedSeq int64) error {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return err
	}
	if err := validateRequired("timerID", timerID, true); err != nil {
		return err
	}
	if fireAt.UnixMilli() < 0 {
		return invalid("fireAt", "is before 1970")
	}
	if armedSeq < 0 {
		return invalid("armedSeq", "is negative (%d)", armedSeq)
	}
	return nil
}

// ScheduleTimer arms a workflow's timer to fire at fireAt (store-clock ms), replacing a
// prior arming of the same timer id.
func (s *Store) ScheduleTimer(ctx context.Context, workflowID, timerID string, fireAt time.Time, armedSeq int64) error {
	if err := validateTimer(workflowID, timerID, fireAt, armedSeq); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfScheduleTimer, workflowID, workflowID, timerID, fireAt.UnixMilli(), armedSeq)
	return err
}

// RetireTimer removes the arming (fireAt, armedSeq) of a workflow's timer: TimerRetired
// when it did or when the timer is not armed, TimerSuperseded (and nothing removed)
// when the timer was re-armed since.
func (s *Store) RetireTimer(ctx context.Context, workflowID, timerID string, fireAt time.Time, armedSeq int64) (TimerRetirement, error) {
	if err := validateTimer(workflowID, timerID, fireAt, armedSeq); err != nil {
		return "", err
	}
	reply, err := s.run(ctx, scriptWfRetireTimer, workflowID, workflowID, timerID, fireAt.UnixMilli(), armedSeq)
	if err != nil {
		return "", err
	}
	return TimerRetirement(asString(reply, 0)), nil
}

// ExpiredTimers returns up to limit armed timers with FireAt <= asOf (the store clock's
// now when asOf is zero), ordered by FireAt, then workflow id, then timer id. Timers stay
// armed until retired. limit defaults to 100 (0) and is at most 1,000.
func (s *Store) ExpiredTimers(ctx context.Context, asOf time.Time, limit int) ([]TimerEntry, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	at := int64(-1)
	if !asOf.IsZero() {
		at = asOf.UnixMilli()
	}
	reply, err := s.run(ctx, scriptWfExpiredTimers, "", at, limit)
	if err != nil {
		return nil, err
	}
	out := make([]TimerEntry, 0, len(reply)/4)
	for i := 0; i+3 < len(reply); i += 4 {
		out = append(out, TimerEntry{WorkflowID: asString(reply, i), TimerID: asString(reply, i+1),
			FireAt: time.UnixMilli(asInt(reply, i+2)), ArmedSeq: asInt(reply, i+3)})
	}
	return out, nil
}

// TimersArmedChannel is the Redis pub/sub channel on which arming a timer that fires
// before every other armed one announces its fire time (ms, decimal), from any process:
// the workers' timers duty, asleep until the earliest fire time it last saw, listens on
// it and looks again.
func (s *Store) TimersArmedChannel() string { return s.keys.TimersArmed() }

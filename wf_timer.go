package headgate

import "time"

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

// TimersArmedChannel is the Redis pub/sub channel on which arming a timer that fires
// before every other armed one announces its fire time (ms, decimal), from any process:
// the workers' timers duty, asleep until the earliest fire time it last saw, listens on
// it and looks again.
func (s *Store) TimersArmedChannel() string { return s.keys.TimersArmed() }

package headgate

import (
	"context"
	"time"
)

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

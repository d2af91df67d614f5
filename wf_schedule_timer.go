package headgate

import (
	"context"
	"time"
)

// ScheduleTimer arms a workflow's timer to fire at fireAt (store-clock ms), replacing a
// prior arming of the same timer id.
func (s *Store) ScheduleTimer(ctx context.Context, workflowID, timerID string, fireAt time.Time, armedSeq int64) error {
	if err := validateTimer(workflowID, timerID, fireAt, armedSeq); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptWfScheduleTimer, workflowID, workflowID, timerID, fireAt.UnixMilli(), armedSeq)
	return err
}

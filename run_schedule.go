package headgate

import (
	"context"
	"errors"
)

// RunScheduleNow enqueues a schedule's job now, out of turn (also while it is paused),
// with the id "cron:<name>:run:<store ms>"; the schedule's own ticks are unaffected. A
// second run in the same store millisecond is a replay (Replayed, no State). A
// refusal is the error Enqueue would return (*BackpressureError, *QuarantinedError,
// *DuplicateError, *IDConflictError); ErrScheduleNotFound for a name the namespace
// lacks.
func (s *Store) RunScheduleNow(ctx context.Context, name string) (EnqueueResult, error) {
	for attempt := 0; ; attempt++ {
		st, err := s.GetSchedule(ctx, name)
		if err != nil {
			return EnqueueResult{}, err
		}
		reply, err := s.run(ctx, scriptRunSchedule, name, append(templateArgs(st.Job), name, st.Revision)...)
		var moved *ScheduleMovedError
		if errors.As(err, &moved) && attempt == 0 {
			continue // updated between the read and the run: read it again
		}
		if err != nil {
			return EnqueueResult{}, err
		}
		if asString(reply, 1) == "replayed" {
			return EnqueueResult{ID: asString(reply, 0), Replayed: true}, nil
		}
		return EnqueueResult{ID: asString(reply, 0), State: StateAvailable}, nil
	}
}

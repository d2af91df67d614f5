package worker

import (
	"context"
	"time"

	"github.com/headgate/headgate"
)

// cronPass fires the due ticks of the namespace's schedules under the cron duty's
// tenure and sleeps until the next due tick, at most CronInterval. A tick the namespace
// refused is logged (the schedule keeps the count and the reason too).
func (w *Worker) cronPass(ctx context.Context, fence int64) (time.Duration, error) {
	f := headgate.DutyFence{Duty: DutyCron, Holder: w.cfg.ID, Fence: fence}
	res, next, err := w.store.FireDueSchedules(ctx, f, maintenanceBatch)
	if err != nil {
		return 0, err
	}
	for _, r := range res {
		switch r.Outcome {
		case headgate.TickRefused:
			w.log.Warn("schedule tick refused", "schedule", r.Schedule, "tick", r.Tick, "job_id", r.JobID, "error", r.Err)
		case headgate.TickEnqueued:
			w.log.Debug("schedule fired", "schedule", r.Schedule, "tick", r.Tick, "job_id", r.JobID)
		}
	}
	return w.untilDue(ctx, next, w.cfg.CronInterval)
}

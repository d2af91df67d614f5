package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/headgate/headgate"
)

// cronPass fires the due ticks of the namespace's schedules under the cron duty's
// tenure and sleeps until the next due tick, at most CronInterval. A tick the namespace
// refused is logged (the schedule keeps the count and the reason too), and so is a
// schedule whose stored data is unusable, which the pass passes over.
func (w *Worker) cronPass(ctx context.Context, fence int64) (time.Duration, error) {
	f := headgate.DutyFence{Duty: DutyCron, Holder: w.cfg.ID, Fence: fence}
	res, next, err := w.store.FireDueSchedules(ctx, f, maintenanceBatch)
	for _, r := range res {
		switch r.Outcome {
		case headgate.TickRefused:
			w.log.Warn("schedule tick refused", "schedule", r.Schedule, "tick", r.Tick, "job_id", r.JobID, "error", r.Err)
		case headgate.TickEnqueued:
			w.log.Debug("schedule fired", "schedule", r.Schedule, "tick", r.Tick, "job_id", r.JobID)
		}
	}
	var bad *headgate.CorruptError
	if errors.As(err, &bad) {
		w.logRepeated(slog.LevelError, "cron:"+err.Error(), "schedule data unusable: passed over until it is fixed or removed",
			[]any{"error", err})
		err = nil
	}
	if err != nil {
		return 0, err
	}
	return w.untilDue(ctx, next, w.cfg.CronInterval)
}

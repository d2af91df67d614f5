package inspector

import (
	"context"

	"github.com/headgate/headgate"
)

// Aliases of the schedule types.
type (
	// Schedule is a periodic job: a cron expression or an interval, a zone, the job
	// template and the misfire policy.
	Schedule = headgate.Schedule
	// ScheduleState is a schedule with what its firing has done so far.
	ScheduleState = headgate.ScheduleState
	// Misfire is a schedule's misfire policy.
	Misfire = headgate.Misfire
)

// Schedules returns up to limit schedules in name order after the cursor ("" = from
// the first), and the cursor of the next page ("" = no more).
func (i *Inspector) Schedules(ctx context.Context, cursor string, limit int) ([]*ScheduleState, string, error) {
	return i.store.ListSchedules(ctx, cursor, limit)
}

// Schedule returns one schedule, or an error matching headgate.ErrScheduleNotFound.
func (i *Inspector) Schedule(ctx context.Context, name string) (*ScheduleState, error) {
	return i.store.GetSchedule(ctx, name)
}

// AddSchedule adds a schedule to the namespace; the fleet's workers fire it. Refusals:
// *headgate.InvalidError, *headgate.ScheduleExistsError.
func (i *Inspector) AddSchedule(ctx context.Context, sc Schedule) error {
	_, err := i.store.AddSchedule(ctx, sc)
	return i.audit(err, "schedule added", "schedule", sc.Name, "cron", sc.Cron, "interval", sc.Interval, "zone", sc.Zone)
}

// UpdateSchedule replaces a schedule's definition, keeping its mark and pause.
func (i *Inspector) UpdateSchedule(ctx context.Context, sc Schedule) error {
	_, err := i.store.UpdateSchedule(ctx, sc)
	return i.audit(err, "schedule updated", "schedule", sc.Name, "cron", sc.Cron, "interval", sc.Interval, "zone", sc.Zone)
}

// PauseSchedule stops a schedule's ticks; false when it was paused already.
func (i *Inspector) PauseSchedule(ctx context.Context, name string) (bool, error) {
	changed, err := i.store.PauseSchedule(ctx, name)
	return changed, i.auditChange(changed, err, "schedule paused", "schedule", name)
}

// ResumeSchedule lets a paused schedule fire again from its next tick; the ticks of the
// pause never fire. False when it was not paused.
func (i *Inspector) ResumeSchedule(ctx context.Context, name string) (bool, error) {
	changed, err := i.store.ResumeSchedule(ctx, name)
	return changed, i.auditChange(changed, err, "schedule resumed", "schedule", name)
}

// RemoveSchedule removes a schedule; the jobs it enqueued stay.
func (i *Inspector) RemoveSchedule(ctx context.Context, name string) error {
	return i.audit(i.store.RemoveSchedule(ctx, name), "schedule removed", "schedule", name)
}

// RunScheduleNow enqueues a schedule's job now, out of turn; a refusal is the error
// an enqueue would give. A replay (the job of that same moment enqueued already) is not
// logged.
func (i *Inspector) RunScheduleNow(ctx context.Context, name string) (headgate.EnqueueResult, error) {
	r, err := i.store.RunScheduleNow(ctx, name)
	return r, i.auditChange(!r.Replayed, err, "schedule run now", "schedule", name, "job_id", r.ID)
}

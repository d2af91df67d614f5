package rqueue

import (
	"context"

	"github.com/headgate/headgate"
)

// AddSchedule adds a schedule to the namespace whose ticks enqueue args with opts, as
// Enqueue would (encoded the same way, with the client's defaults); sc.Job is replaced
// by that job. opts may not set an ID, a time or Pending (each tick sets them), nor
// Unique.Debounce or Unique.Replace: each is an *headgate.InvalidError naming the
// option. The fleet's workers fire the schedule; see headgate.Schedule.
func (c *Client) AddSchedule(ctx context.Context, sc headgate.Schedule, args Args, opts *EnqueueOpts) error {
	if err := c.scheduleJob(&sc, args, opts); err != nil {
		return err
	}
	_, err := c.store.AddSchedule(ctx, sc)
	return err
}

// UpdateSchedule replaces a schedule's definition, its job made from args and opts as
// AddSchedule makes it; the schedule keeps its mark, pause and counters.
func (c *Client) UpdateSchedule(ctx context.Context, sc headgate.Schedule, args Args, opts *EnqueueOpts) error {
	if err := c.scheduleJob(&sc, args, opts); err != nil {
		return err
	}
	_, err := c.store.UpdateSchedule(ctx, sc)
	return err
}

func (c *Client) scheduleJob(sc *headgate.Schedule, args Args, opts *EnqueueOpts) error {
	// Named here as the caller set them: the store would name its envelope's fields.
	if opts != nil {
		switch {
		case opts.ID != "":
			return invalid("opts.ID", "must be empty: each tick's job is cron:%s:<tick>", sc.Name)
		case !opts.ScheduledAt.IsZero():
			return invalid("opts.ScheduledAt", "must be empty: each tick's job runs at its tick")
		case opts.ScheduledIn != 0:
			return invalid("opts.ScheduledIn", "must be empty: each tick's job runs at its tick")
		case opts.Pending:
			return invalid("opts.Pending", "cannot be set on a schedule's job")
		case opts.Unique.Debounce != 0:
			return invalid("opts.Unique.Debounce", "does not apply to a schedule's job: a tick that finds its key held is refused and recorded")
		case opts.Unique.Replace != 0:
			return invalid("opts.Unique.Replace", "does not apply to a schedule's job: a tick that finds its key held is refused and recorded")
		}
	}
	env, err := c.envelope("args", "opts", args, opts)
	if err != nil {
		return err
	}
	env.ID = ""
	sc.Job = env
	return nil
}

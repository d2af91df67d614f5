package rqueue

import (
	"context"

	"github.com/headgate/headgate"
)

// AddSchedule adds a schedule to the namespace whose ticks enqueue args with opts, as
// Enqueue would (encoded the same way, with the client's defaults); sc.Job is replaced
// by that job. opts may not set an ID, a time or Pending: each tick sets them. The
// fleet's workers fire the schedule; see headgate.Schedule.
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
	if opts != nil && opts.ID != "" {
		return invalid("opts.ID", "must be empty: each tick's job is cron:%s:<tick>", sc.Name)
	}
	env, err := c.envelope("args", "opts", args, opts)
	if err != nil {
		return err
	}
	env.ID = ""
	sc.Job = env
	return nil
}

package rqueue

import (
	"context"
	"errors"
	"strings"

	"github.com/headgate/headgate"
)

// AddSchedule adds a schedule to the namespace whose ticks enqueue args with opts, as
// Enqueue would (encoded the same way, with the client's defaults); sc.Job is replaced
// by that job. opts may not set an ID, a time or Pending (each tick sets them), nor
// Unique.Debounce or Unique.Replace, and neither may the args' own EnqueueOpts (an ID
// of theirs is left out): each is an *headgate.InvalidError naming the option, as is
// any option the store refuses. The fleet's workers fire the schedule; see
// headgate.Schedule.
func (c *Client) AddSchedule(ctx context.Context, sc headgate.Schedule, args Args, opts *EnqueueOpts) error {
	if err := c.scheduleJob(&sc, args, opts); err != nil {
		return err
	}
	_, err := c.store.AddSchedule(ctx, sc)
	return scheduleFields(err)
}

// UpdateSchedule replaces a schedule's definition, its job made from args and opts as
// AddSchedule makes it; the schedule keeps its mark, pause and counters.
func (c *Client) UpdateSchedule(ctx context.Context, sc headgate.Schedule, args Args, opts *EnqueueOpts) error {
	if err := c.scheduleJob(&sc, args, opts); err != nil {
		return err
	}
	_, err := c.store.UpdateSchedule(ctx, sc)
	return scheduleFields(err)
}

func (c *Client) scheduleJob(sc *headgate.Schedule, args Args, opts *EnqueueOpts) error {
	if opts != nil && opts.ID != "" {
		return invalid("opts.ID", "must be empty: each tick's job is cron:%s:<tick>", sc.Name)
	}
	env, err := c.envelope("args", "opts", args, opts)
	if err != nil {
		return err
	}
	// Checked on the job as the options made it, the args' own defaults included, and
	// named as the caller set them: the store would name its envelope's fields.
	switch {
	case !env.ScheduledAt.IsZero():
		return invalid("opts.ScheduledAt", "must be empty: each tick's job runs at its tick")
	case env.ScheduledIn != 0:
		return invalid("opts.ScheduledIn", "must be empty: each tick's job runs at its tick")
	case env.Pending:
		return invalid("opts.Pending", "cannot be set on a schedule's job")
	case env.UniqueDebounce != 0:
		return invalid("opts.Unique.Debounce", "does not apply to a schedule's job: a tick that finds its key held is refused and recorded")
	case env.UniqueReplace != 0:
		return invalid("opts.Unique.Replace", "does not apply to a schedule's job: a tick that finds its key held is refused and recorded")
	}
	env.ID = ""
	sc.Job = env
	return nil
}

// scheduleFields renames the store's refusal of a schedule's job ("Job.PartitionKey")
// after the option the caller set ("opts.Partition"), as Enqueue does.
func scheduleFields(err error) error {
	var inv *headgate.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	name, ok := strings.CutPrefix(inv.Field, "Job.")
	if !ok {
		return err
	}
	tail := ""
	if j := strings.IndexAny(name, ".["); j >= 0 {
		name, tail = name[:j], name[j:]
	}
	switch {
	case name == "Kind":
		return &headgate.InvalidError{Field: "args.Kind()", Reason: inv.Reason}
	case optionOfField[name] != "":
		return &headgate.InvalidError{Field: "opts" + optionOfField[name] + tail, Reason: inv.Reason}
	}
	return err
}

package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"github.com/headgate/headgate/inspector"
)

func pauseFlags(fs *flag.FlagSet, c *cli) {
	fs.BoolVar(&c.create, "create", false, "act on a queue the namespace does not know yet (no job, limit or pause so far)")
}

// unknownQueue refuses, unless -create was given, to pause or resume a queue the
// namespace does not know: a mistyped name would otherwise pause nothing anyone uses,
// and leave a paused queue behind for the day the name is used.
func (c *cli) unknownQueue(ctx context.Context, verb, queue string) error {
	if c.create {
		return nil
	}
	stats, err := c.insp.Stats(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(stats, func(s inspector.QueueStats) bool { return s.Queue == queue }) {
		return nil
	}
	fmt.Fprintf(c.stderr, "headgate %s: warning: namespace %s has no queue %q (it never had a job, a limit or a pause)\n",
		verb, c.namespace, short(queue))
	return fmt.Errorf("nothing %sd; pass -create to %s the queue anyway", verb, verb)
}

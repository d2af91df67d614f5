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

// unknownQueue refuses, unless -create was given, to pause, resume or limit a queue the
// namespace does not know: a mistyped name would otherwise pause or bound nothing anyone
// uses, report that it did, and leave the setting behind for the day the name is used.
// It reports whether the queue is paused now, so the verb can say that it had nothing
// to do.
func (c *cli) unknownQueue(ctx context.Context, verb, queue string) (paused bool, err error) {
	stats, err := c.insp.Stats(ctx)
	if err != nil {
		return false, err
	}
	if i := slices.IndexFunc(stats, func(s inspector.QueueStats) bool { return s.Queue == queue }); i >= 0 {
		return stats[i].Paused, nil
	}
	if c.create {
		return false, nil
	}
	fmt.Fprintf(c.stderr, "headgate %s: warning: namespace %s has no queue %q (it never had a job, a limit or a pause)\n",
		verb, c.namespace, short(queue))
	done := map[string]string{"pause": "paused", "resume": "resumed", "limit": "limited"}[verb]
	return false, fmt.Errorf("nothing %s; pass -create to %s the queue anyway", done, verb)
}

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

// warnUnknownQueue warns on stderr when the namespace does not know queue (it never had
// a job, a limit or a pause), naming the queues it has: a listing or a run by filter of
// a mistyped queue, or of the default queue of a namespace whose jobs are all in named
// queues, finds nothing, and "no matching jobs" alone reads as a queue without such jobs.
// stats are the namespace's queues when the caller has them (nil: read them).
func (c *cli) warnUnknownQueue(ctx context.Context, verb, queue string, stats []inspector.QueueStats) error {
	if stats == nil {
		var err error
		if stats, err = c.insp.Stats(ctx); err != nil {
			return err
		}
	}
	unknown, has := inspector.UnknownQueue(stats, queue)
	if !unknown {
		return nil
	}
	fmt.Fprintf(c.stderr, "headgate %s: warning: namespace %s has no queue %q (it never had a job, a limit or a pause; %s)\n",
		verb, c.namespace, short(queue), has)
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

// bulkOpts are the flags of cancel, retry and delete by filter.
type bulkOpts struct {
	filter filterOpts
	dryRun bool
	cursor string
}

func bulkFlags(fs *flag.FlagSet, c *cli) {
	c.bulk.filter.register(fs, "default")
	fs.BoolVar(&c.bulk.dryRun, "dry-run", false, "by filter: count the jobs, write nothing")
	fs.StringVar(&c.bulk.cursor, "cursor", "", "by filter: resume an interrupted run from this `cursor`, with the same filter")
}

func cancelFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	bulkFlags(fs, c)
}

// byFilter reports whether a verb runs by filter (-state given) rather than on ids.
func (o *bulkOpts) byFilter() bool { return o.filter.state != "" }

// byIDs refuses the flags of a run by filter on a verb given job ids: ignored, they would
// let "delete ID -dry-run" delete the job, or "-kind K" act on a job of another kind.
func (o *bulkOpts) byIDs() error {
	f := o.filter
	for _, v := range []struct {
		name string
		set  bool
	}{{"dry-run", o.dryRun}, {"cursor", o.cursor != ""}, {"queue", f.queue != "default"}, {"kind", f.kind != ""},
		{"partition", f.partition != ""}, {"tag", f.tag != ""}, {"fingerprint", f.fingerprint != ""},
		{"older-than", f.olderThan != 0}} {
		if v.set {
			return usagef("-%s goes with -state (a run by filter), not with job ids", v.name)
		}
	}
	return nil
}

// bulkVerb is what cmdBulk needs of one verb.
type bulkVerb struct {
	name, done string // "cancel", "cancelled"
	run        func(context.Context, inspector.JobFilter, *inspector.BulkOptions) (inspector.BulkResult, error)
}

// cmdBulk runs a verb by filter: batch after batch, a progress line on stderr after each,
// the totals on stdout (one JSON document with -json). When a batch fails, it says on
// stderr what was done and prints the command that resumes the run (bulkStopped).
// -timeout bounds each batch, not the run: a tenant's purge of a million jobs takes
// longer than any one call should, and stopping it at the command's deadline would tell
// the operator that Redis did not answer when it answered every batch. An interrupt
// still stops the run between batches.
func cmdBulk(ctx context.Context, c *cli, args []string, v bulkVerb) error {
	if len(args) > 0 {
		return usagef("give job ids or -state with its filter, not both")
	}
	f, err := c.bulk.filter.jobFilter()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt)
	defer stop()
	o := &inspector.BulkOptions{DryRun: c.bulk.dryRun, Cursor: c.bulk.cursor, KeepAttempts: c.verbs.keepAttempts,
		Progress: func(p inspector.BulkProgress) {
			verb := v.done
			if c.bulk.dryRun {
				verb = "would be " + v.done
			}
			fmt.Fprintf(c.stderr, "%s: batch %d: %d %s, %d skipped\n", v.name, p.Batches, p.Moved, verb, p.Skipped)
		}}
	res, runErr := v.run(ctx, f, o)
	if u := byFlag(cursorOfAnotherFilter(runErr, c.bulk.filter), filterFlagNames); u != runErr {
		return u // a bad flag, refused before any batch
	}
	if runErr != nil && res.Batches == 0 {
		res.Cursor = c.bulk.cursor // nothing done: the run resumes where it started
	}
	if runErr != nil {
		c.bulkStopped(v, res, runErr)
	} else if res.Moved == 0 && res.Skipped == 0 {
		if err := c.warnUnknownQueue(ctx, v.name, f.Queue, nil); err != nil {
			return err
		}
	}
	if c.verbs.json {
		// Every field always, null when it has no value: cursor is what -cursor resumes
		// the run from (null: none, the run is done or starts again as it was given),
		// error why the run stopped (null: it did not).
		out := struct {
			Verb    string  `json:"verb"`
			DryRun  bool    `json:"dry_run"`
			Moved   int64   `json:"moved"`
			Skipped int64   `json:"skipped"`
			Batches int     `json:"batches"`
			Cursor  *string `json:"cursor"`
			Error   *string `json:"error"`
		}{v.name, c.bulk.dryRun, res.Moved, res.Skipped, res.Batches, orNull(res.Cursor), nil}
		if runErr != nil {
			out.Error = orNull(runErr.Error())
		}
		if err := c.printJSON(out); err != nil {
			return errors.Join(runErr, err)
		}
		return runErr
	}
	if runErr != nil {
		return runErr
	}
	if c.bulk.dryRun {
		fmt.Fprintf(c.stdout, "dry run: %d job(s) would be %s, %d skipped; nothing written\n", res.Moved, v.done, res.Skipped)
	} else {
		fmt.Fprintf(c.stdout, "%d job(s) %s, %d skipped, in %d batch(es)\n", res.Moved, v.done, res.Skipped, res.Batches)
	}
	if res.Skipped > 0 {
		// A count alone leaves the operator guessing why jobs the filter selected were left.
		why := "jobs that left the state since the run began, or whose data could not be read"
		if v.name == "retry" {
			why = "jobs whose unique key another job holds, " + why
		}
		fmt.Fprintf(c.stdout, "skipped: %s\n", why)
	}
	if v.name == "retry" && !c.bulk.dryRun && res.Moved > 0 && f.State == headgate.StateQuarantined {
		// A retried quarantined job whose fingerprint stays quarantined is available but
		// held, as a retry by id says: the count alone reads as jobs that will run.
		q, err := c.insp.Quarantined(ctx)
		if err != nil {
			return err
		}
		if len(q) > 0 {
			fmt.Fprintf(c.stdout, "held: a retried job whose fingerprint is still quarantined waits with its siblings "+
				"(%d fingerprint(s) quarantined: headgate quarantine); headgate quarantine release FP lets them run\n", len(q))
		}
	}
	return nil
}

// bulkStopped says on stderr how a run by filter that failed ended and how to go on: a
// batch refused by the queue's enqueue limit (backpressure) is named as such, with what
// the run did before it and how to make room; every stop but a refused input prints the
// command that resumes the run, the same command when it stopped before its first batch;
// a stop without Redis's answer to the last call says that batch may have been applied
// (inFlight).
func (c *cli) bulkStopped(v bulkVerb, res inspector.BulkResult, err error) {
	if errors.As(err, new(*headgate.InvalidError)) {
		return // the command line was wrong: nothing to resume
	}
	resume := c.commandLine(v.name) + c.bulk.filter.flags()
	if c.verbs.keepAttempts {
		resume += " -keep-attempts"
	}
	if c.bulk.dryRun {
		resume += " -dry-run"
	}
	if res.Cursor != "" {
		resume += " -cursor " + res.Cursor
	}
	verb, holds := v.done, "holds"
	if c.bulk.dryRun {
		// Nothing was written: the counts are what the run would have done.
		verb, holds = "would be "+v.done, "would hold"
	}
	done := "nothing " + verb
	if res.Moved > 0 {
		done = fmt.Sprintf("%d job(s) %s before it", res.Moved, verb)
	}
	var bp *headgate.BackpressureError
	switch {
	case errors.As(err, &bp):
		fmt.Fprintf(c.stderr, "%s: batch %d refused by backpressure: queue %s %s %d unfinished job(s) of its enqueue limit of %d "+
			"and the batch would add %d; %s\nmake room (let the queue drain, or raise its limit: headgate limit %s N|off), then resume: %s\n",
			v.name, res.Batches+1, bp.Queue, holds, bp.Current, bp.Limit, bp.Incoming, done, bp.Queue, resume)
	case res.Batches == 0:
		fmt.Fprintf(c.stderr, "%s stopped before its first batch: %s%s; run it again: %s\n", v.name, done, inFlight(err), resume)
	default:
		fmt.Fprintf(c.stderr, "%s stopped after %d batch(es), %s%s; resume: %s\n", v.name, res.Batches, done, inFlight(err), resume)
	}
}

// inFlight is what a run's stop line adds when the run stopped without Redis's answer to
// its last call (no reply in time, a dropped connection, an interrupt): that batch may
// have been applied, and then it is not in the counts. The resume, from the cursor before
// it, does not meet its jobs again: they left the state it selects.
func inFlight(err error) string {
	if !unreachable(err) && !errors.Is(err, context.Canceled) {
		return ""
	}
	return " (and the batch in flight may have been applied, uncounted)"
}

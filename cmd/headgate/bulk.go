package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

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
	fs.StringVar(&c.bulk.cursor, "cursor", "", "by filter: resume an interrupted run from this `cursor`")
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
// the totals on stdout (one JSON document with -json). When a batch fails, it prints the
// command that resumes the run.
func cmdBulk(ctx context.Context, c *cli, args []string, v bulkVerb) error {
	if len(args) > 0 {
		return usagef("give job ids or -state with its filter, not both")
	}
	f, err := c.bulk.filter.jobFilter()
	if err != nil {
		return err
	}
	o := &inspector.BulkOptions{DryRun: c.bulk.dryRun, Cursor: c.bulk.cursor, KeepAttempts: c.verbs.keepAttempts,
		Progress: func(p inspector.BulkProgress) {
			verb := v.done
			if c.bulk.dryRun {
				verb = "would be " + v.done
			}
			fmt.Fprintf(c.stderr, "%s: batch %d: %d %s, %d skipped\n", v.name, p.Batches, p.Moved, verb, p.Skipped)
		}}
	res, runErr := v.run(ctx, f, o)
	if runErr != nil && res.Cursor != "" {
		resume := "headgate " + v.name + c.bulk.filter.flags()
		if c.bulk.dryRun {
			resume += " -dry-run"
		}
		fmt.Fprintf(c.stderr, "%s stopped after %d batch(es); resume: %s -cursor %s\n", v.name, res.Batches, resume, res.Cursor)
	}
	if c.verbs.json {
		out := struct {
			Verb    string `json:"verb"`
			DryRun  bool   `json:"dry_run"`
			Moved   int64  `json:"moved"`
			Skipped int64  `json:"skipped"`
			Batches int    `json:"batches"`
			Cursor  string `json:"cursor"`
			Error   string `json:"error,omitempty"`
		}{v.name, c.bulk.dryRun, res.Moved, res.Skipped, res.Batches, res.Cursor, ""}
		if runErr != nil {
			out.Error = runErr.Error()
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
	return nil
}

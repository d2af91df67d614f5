package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
)

func (c *cli) table() *tabwriter.Writer { return tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0) }

func wantArgs(args []string, n int) error {
	if len(args) != n {
		return usagef("want %d argument(s), got %d", n, len(args))
	}
	return nil
}

// unfinishedStates and finishedStates split the stats columns at the terminal line.
var (
	unfinishedStates = []headgate.State{headgate.StatePending, headgate.StateScheduled, headgate.StateAvailable,
		headgate.StateRunning, headgate.StateRetryable}
	finishedStates = []headgate.State{headgate.StateCompleted, headgate.StateArchived, headgate.StateCancelled,
		headgate.StateUndecodable, headgate.StateQuarantined}
)

func cmdStats(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 0); err != nil {
		return err
	}
	stats, err := c.insp.Stats(ctx)
	if err != nil {
		return err
	}
	quarantined, err := c.insp.Quarantined(ctx)
	if err != nil {
		return err
	}
	now, err := c.insp.Now(ctx)
	if err != nil {
		return err
	}
	queues := make([]string, len(stats))
	for i, s := range stats {
		queues[i] = s.Queue
	}
	// The last hour's acks: one read of every queue's series, whatever its jobs.
	lastHour, err := c.insp.Throughput(ctx, now, time.Hour, queues...)
	if err != nil {
		return err
	}
	if c.verbs.json {
		return c.printJSON(statsDoc(c.namespace, now, stats, lastHour, len(quarantined)))
	}
	if len(stats) == 0 {
		fmt.Fprintf(c.stdout, "namespace %s has no queues\n", c.namespace)
		return nil
	}
	tw := c.table()
	fmt.Fprint(tw, "QUEUE\tSTATUS\tLIMIT\tUNFINISHED")
	for _, s := range append(unfinishedStates, finishedStates...) {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(s)))
		if s == headgate.StateAvailable {
			fmt.Fprint(tw, "\tHELD")
		}
	}
	fmt.Fprintln(tw, "\tCOMPLETED/1H\tFAILED/1H")
	total := inspector.QueueStats{Queue: "(total)", Counts: map[headgate.State]int64{}}
	var totalHour inspector.Outcomes
	row := func(s inspector.QueueStats, status, limit string, hour inspector.Outcomes) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d", s.Queue, status, limit, s.Unfinished)
		for _, st := range append(unfinishedStates, finishedStates...) {
			fmt.Fprintf(tw, "\t%d", s.Counts[st])
			if st == headgate.StateAvailable {
				// Held jobs are available but for their quarantined fingerprint: a column
				// of their own, or the unfinished total would not add up.
				fmt.Fprintf(tw, "\t%d", s.Held)
			}
		}
		if hour.Sampled {
			fmt.Fprintf(tw, "\t%d\t%d\n", hour.Completed, hour.Failed)
		} else {
			fmt.Fprint(tw, "\t-\t-\n")
		}
	}
	for _, s := range stats {
		status, limit := "active", "-"
		if s.Paused {
			status = "paused"
		}
		if s.Limit != nil {
			limit = strconv.FormatInt(*s.Limit, 10)
			if s.Unfinished >= *s.Limit {
				limit += " (full)"
			}
		}
		hour := lastHour[s.Queue]
		row(s, status, limit, hour)
		total.Unfinished += s.Unfinished
		total.Held += s.Held
		for st, n := range s.Counts {
			total.Counts[st] += n
		}
		totalHour.Completed += hour.Completed
		totalHour.Failed += hour.Failed
		totalHour.Sampled = totalHour.Sampled || hour.Sampled
	}
	if len(stats) > 1 {
		row(total, "", "", totalHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !totalHour.Sampled {
		fmt.Fprintln(c.stdout, "\nno throughput sampled in the last hour: a worker's series duty samples it once a minute")
	}
	if len(quarantined) > 0 {
		fmt.Fprintf(c.stdout, "\n%d quarantined fingerprint(s): see headgate quarantine\n", len(quarantined))
	}
	if line := unrunnableLine(stats); line != "" {
		fmt.Fprint(c.stdout, "\n"+line)
	}
	if line := unservedLine(stats); line != "" {
		fmt.Fprint(c.stdout, "\n"+line)
	}
	return nil
}

type jobsOpts struct {
	filter         filterOpts
	cursor         string
	limit          int
	oldest, newest bool
	json           bool
}

// filterOpts are the flags of a job filter, shared by jobs and the bulk verbs.
type filterOpts struct {
	queue, state, kind, partition, tag, fingerprint string
	olderThan                                       time.Duration
}

func (f *filterOpts) register(fs *flag.FlagSet, queueDefault string) {
	fs.StringVar(&f.queue, "queue", queueDefault, "jobs of this `queue`")
	fs.StringVar(&f.state, "state", "", "jobs in this `state` ("+stateList()+", held)")
	fs.StringVar(&f.kind, "kind", "", "only jobs of this `kind`")
	fs.StringVar(&f.partition, "partition", "", "only jobs of this `partition`")
	fs.StringVar(&f.tag, "tag", "", "only jobs with this `tag`")
	fs.StringVar(&f.fingerprint, "fingerprint", "", "only jobs with this `fingerprint`")
	durationFlag(fs, &f.olderThan, "older-than", 0, "only jobs that entered the state at least `D` ago (store time; 90m, 24h, 7d)")
}

func (f *filterOpts) jobFilter() (inspector.JobFilter, error) {
	if f.state == "" {
		return inspector.JobFilter{}, usagef("-state is required: one of %s, held", stateList())
	}
	return inspector.JobFilter{Queue: f.queue, State: headgate.State(f.state), Kind: f.kind, Partition: f.partition,
		Tag: f.tag, Fingerprint: f.fingerprint, OlderThan: f.olderThan}, nil
}

// flags repeats the filter for a follow-up command line.
func (f *filterOpts) flags() string {
	var b strings.Builder
	for _, v := range []struct{ name, v string }{{"queue", f.queue}, {"state", f.state}, {"kind", f.kind},
		{"partition", f.partition}, {"tag", f.tag}, {"fingerprint", f.fingerprint}} {
		if v.v != "" {
			fmt.Fprintf(&b, " -%s %s", v.name, strconv.Quote(v.v))
		}
	}
	if f.olderThan > 0 {
		fmt.Fprintf(&b, " -older-than %s", f.olderThan)
	}
	return b.String()
}

// filterFlagNames name the flags of a job filter and page by the field of the store's
// *InvalidError that a bad value of theirs gets (byFlag).
var filterFlagNames = map[string]string{"Queue": "-queue", "State": "-state", "Kind": "-kind", "Partition": "-partition",
	"Tag": "-tag", "Fingerprint": "-fingerprint", "OlderThan": "-older-than", "Limit": "-limit", "Cursor": "-cursor"}

// editFlagNames name the flags of edit (and of retry by job ids) by the field of the
// edit that a bad value of theirs gets; partition is the flag of the new partition.
func editFlagNames(prefix, partition string) map[string]string {
	return map[string]string{prefix + "Payload": "-payload", prefix + "MaxAttempts": "-max-attempts",
		prefix + "ScheduledAt": "-at", prefix + "PartitionKey": partition, prefix + "Tags": "-tags: a tag"}
}

// byFlag turns a store's *InvalidError of a value the user typed into a usage error
// named by its flag: "invalid edit.MaxAttempts" or "invalid State" names a field of the
// library, not what was typed. Other errors are returned as they are.
func byFlag(err error, flags map[string]string) error {
	var inv *headgate.InvalidError
	if errors.As(err, &inv) {
		if name, ok := flags[inv.Field]; ok {
			return usagef("%s %s", name, inv.Reason)
		}
	}
	return err
}

// cursorOfAnotherFilter turns the store's refusal of a cursor made for another filter
// into a usage error that names the flags: the store names the filter's fields, and
// knows only the filter given now (a cursor carries a digest of its own). Other errors
// are returned as they are.
func cursorOfAnotherFilter(err error, f filterOpts) error {
	if !errors.As(err, new(*headgate.CursorFilterError)) {
		return err
	}
	return usagef("-cursor was made for another filter than %s (with this one it would skip jobs); "+
		"start without -cursor, or give the -queue, -state, -kind, -partition, -tag, -fingerprint and -older-than "+
		"of the command that printed it", strings.TrimSpace(f.flags()))
}

func jobsFlags(fs *flag.FlagSet, c *cli) {
	c.jobs.filter.register(fs, "default")
	fs.IntVar(&c.jobs.limit, "limit", 20, "page size: at most `N` jobs (1..1000)")
	fs.BoolVar(&c.jobs.oldest, "oldest", false, "the jobs that entered the state first at the top")
	fs.BoolVar(&c.jobs.newest, "newest", false, "the jobs that entered the state last at the top (the default)")
	fs.StringVar(&c.jobs.cursor, "cursor", "", "continue from this `cursor`, printed at the end of the previous page (with the same filter and order)")
	fs.BoolVar(&c.jobs.json, "json", false, "print one JSON document on stdout")
}

func stateList() string {
	names := make([]string, len(headgate.States))
	for i, s := range headgate.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func cmdJobs(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 0); err != nil {
		return err
	}
	o := c.jobs
	if o.limit < 1 || o.limit > 1000 {
		return usagef("-limit %d is outside 1..1000", o.limit)
	}
	if o.oldest && o.newest {
		return usagef("-oldest and -newest exclude each other")
	}
	f, err := o.filter.jobFilter()
	if err != nil {
		return err
	}
	page, err := c.insp.ListJobs(ctx, f, inspector.Page{Limit: o.limit, Oldest: o.oldest, Cursor: o.cursor})
	if err != nil {
		return byFlag(cursorOfAnotherFilter(err, o.filter), filterFlagNames)
	}
	if len(page.Jobs) == 0 && page.Next == "" {
		if err := c.warnUnknownQueue(ctx, "jobs", f.Queue, nil); err != nil {
			return err
		}
	}
	if o.json {
		return c.printJSON(jobsDoc(page))
	}
	if len(page.Jobs) > 0 {
		tw := c.table()
		fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tSTATE\tFAILED\tPRIORITY\tPARTITION\tSCHEDULED")
		for _, j := range page.Jobs {
			state := string(j.State)
			if j.Held {
				state += " (held)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", j.ID, j.Kind, j.Queue, state,
				j.Attempt, j.MaxAttempts, j.Priority, dash(j.PartitionKey), shortTime(j.ScheduledAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else if page.Next != "" {
		// A page filtered by two or more of partition, tag and fingerprint looks at a
		// bounded stretch of the index: an empty one says nothing of the rest.
		fmt.Fprintf(c.stdout, "no matching jobs on this page, but the listing goes on (filtered by more than one of "+
			"-partition, -tag, -fingerprint, a page looks at %d jobs at most)\n", headgate.ListLimitMax)
	} else {
		fmt.Fprintln(c.stdout, "no matching jobs")
	}
	if page.Next != "" {
		fmt.Fprintf(c.stdout, "\nmore: %s%s -cursor %s\n", c.commandLine("jobs"), o.pageFlags(), page.Next)
	}
	return nil
}

// pageFlags repeats the listing's filter and order for the next page's command line.
func (o jobsOpts) pageFlags() string {
	s := o.filter.flags()
	if o.oldest {
		s += " -oldest"
	}
	if o.limit != 20 {
		s += fmt.Sprintf(" -limit %d", o.limit)
	}
	return s
}

func cmdJob(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	d, err := c.insp.Job(ctx, args[0])
	if err != nil {
		return err
	}
	now, err := c.insp.Now(ctx)
	if err != nil {
		return err
	}
	if c.verbs.json {
		return c.printJSON(jobDetailDoc(d, now))
	}
	printJob(c.stdout, d, now)
	return nil
}

func cmdCancel(ctx context.Context, c *cli, args []string) error {
	if c.bulk.byFilter() {
		return cmdBulk(ctx, c, args, bulkVerb{"cancel", "cancelled", c.insp.BulkCancel})
	}
	if err := c.bulk.byIDs(); err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("name at least one job id")
	}
	type cancelled struct {
		ID string `json:"id"`
	}
	return eachJob(c, args, "cancelled", func(id string) (cancelled, string, error) {
		if err := c.insp.Cancel(ctx, id); err != nil {
			return cancelled{}, "", err
		}
		return cancelled{id}, "cancelled " + id, nil
	}, func(done []cancelled, failed []verbFailure) any {
		return struct {
			Cancelled []cancelled   `json:"cancelled"`
			Failed    []verbFailure `json:"failed"`
		}{done, failed}
	})
}

func cmdRelease(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("name at least one job id")
	}
	ids := slices.Compact(slices.Sorted(slices.Values(args))) // an id given twice is one job
	left, err := c.insp.ReleasePending(ctx, ids...)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "released %d job(s)\n", len(ids)-len(left))
	if len(left) > 0 {
		// Each id left says why: the state it is in, or that no job has it.
		shown := make([]string, len(left))
		for i, id := range left {
			why := "no such job"
			if d, err := c.insp.Job(ctx, id); err == nil {
				why = string(d.Job.State)
			} else if !errors.Is(err, headgate.ErrJobNotFound) {
				why = err.Error()
			}
			shown[i] = short(id) + " (" + why + ")"
		}
		return fmt.Errorf("not pending, left unchanged: %s", strings.Join(shown, ", "))
	}
	return nil
}

func cmdPause(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	paused, err := c.unknownQueue(ctx, "pause", args[0])
	if err != nil {
		return err
	}
	if paused {
		fmt.Fprintf(c.stdout, "queue %s is already paused\n", args[0])
		return nil
	}
	if err := c.insp.Pause(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "paused queue %s: running jobs finish, new jobs wait\n", args[0])
	return nil
}

func cmdResume(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 1); err != nil {
		return err
	}
	paused, err := c.unknownQueue(ctx, "resume", args[0])
	if err != nil {
		return err
	}
	if !paused {
		fmt.Fprintf(c.stdout, "queue %s is already running\n", args[0])
		return nil
	}
	if err := c.insp.Resume(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "resumed queue %s\n", args[0])
	return nil
}

func cmdLimit(ctx context.Context, c *cli, args []string) error {
	if err := wantArgs(args, 2); err != nil {
		return err
	}
	queue, off := args[0], args[1] == "off"
	var n int64
	if !off {
		var err error
		if n, err = strconv.ParseInt(args[1], 10, 64); err != nil || n < 0 {
			return usagef("limit %q is not a count of jobs (0 or more) or off", args[1])
		}
	}
	if _, err := c.unknownQueue(ctx, "limit", queue); err != nil {
		return err
	}
	if off {
		if err := c.insp.RemoveEnqueueLimit(ctx, queue); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "queue %s is unbounded\n", queue)
		return nil
	}
	if err := c.insp.SetEnqueueLimit(ctx, queue, n); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "queue %s accepts at most %d unfinished jobs\n", queue, n)
	return nil
}

func cmdRate(ctx context.Context, c *cli, args []string) error {
	if len(args) == 1 {
		return cmdRateShow(ctx, c, args[0])
	}
	if c.verbs.json {
		return usagef("-json goes with rate CLASS (show)")
	}
	if len(args) == 2 && args[1] == "off" {
		if err := c.insp.RemoveRateLimit(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "rate class %s is unlimited\n", args[0])
		return nil
	}
	if len(args) != 4 {
		return usagef("want CLASS, CLASS LIMIT WINDOW BURST, or CLASS off")
	}
	limit, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || limit < 0 {
		return usagef("LIMIT %q is not a count of tokens (0 or more)", args[1])
	}
	window, err := time.ParseDuration(args[2])
	if err != nil || window <= 0 {
		return usagef("WINDOW %q is not a positive duration such as 1s or 1m", args[2])
	}
	burst, err := strconv.ParseInt(args[3], 10, 64)
	if err != nil || burst <= 0 {
		return usagef("BURST %q is not a positive count of tokens", args[3])
	}
	rl := inspector.RateLimit{Limit: limit, Window: window, Burst: burst}
	if err := c.insp.SetRateLimit(ctx, args[0], rl); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "rate class %s: %d per %s, burst %d\n", args[0], limit, humandur.String(window), burst)
	return nil
}

// requireQuarantined refuses a release of a fingerprint that is not quarantined: the
// release would change nothing and say "released", while a mistyped fingerprint leaves
// the one meant quarantined.
func (c *cli) requireQuarantined(ctx context.Context, fp string) error {
	q, err := c.insp.Quarantined(ctx)
	if err != nil {
		return err
	}
	for _, f := range q {
		if f.Fingerprint == fp {
			return nil
		}
	}
	return fmt.Errorf("fingerprint %q is not quarantined; nothing released (headgate quarantine lists those that are)", short(fp))
}

func cmdQuarantine(ctx context.Context, c *cli, args []string) error {
	switch {
	case len(args) == 2 && args[0] == "release":
		if err := c.requireQuarantined(ctx, args[1]); err != nil {
			return err
		}
		n, err := c.insp.ReleaseQuarantine(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "released fingerprint %s: %d held job(s) returned to admission\n", args[1], n)
		return nil
	case len(args) != 0:
		return usagef("want no arguments, or release FINGERPRINT")
	}
	q, err := c.insp.Quarantined(ctx)
	if err != nil {
		return err
	}
	if len(q) == 0 {
		fmt.Fprintln(c.stdout, "no quarantined fingerprints")
		return nil
	}
	tw := c.table()
	fmt.Fprintln(tw, "FINGERPRINT\tJOB\tHELD")
	for _, f := range q {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", f.Fingerprint, f.JobID, f.Held)
	}
	return tw.Flush()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/humandur"
)

// verbOpts are the flags of retry, edit, delete and quarantine release.
type verbOpts struct {
	json         bool
	at           optString
	keepAttempts bool
	retry        bool // quarantine release -retry
	payload      optString
	priority     optString
	maxAttempts  optString
	partition    optString
	tags         optString
}

// optString is a string flag that knows whether it was given.
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string { return o.v }
func (o *optString) Set(v string) error {
	o.v, o.set = v, true
	return nil
}

func jsonFlag(fs *flag.FlagSet, c *cli) {
	fs.BoolVar(&c.verbs.json, "json", false, "print one JSON document on stdout")
}

func atFlag(fs *flag.FlagSet, c *cli, what string) {
	fs.Var(&c.verbs.at, "at", what+": an RFC 3339 `TIME` (2030-01-02T15:04:05Z), or a duration from the store's now (90s, 2h)")
}

func retryFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	bulkFlags(fs, c)
	atFlag(fs, c, "schedule the jobs for")
	fs.BoolVar(&c.verbs.keepAttempts, "keep-attempts", false, "keep the attempts the jobs have used (default: from zero)")
	// -partition is the filter of a run by -state: the new partition is -set-partition.
	jobEditFlags(fs, c, "set-partition")
}

func editFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	atFlag(fs, c, "new scheduled time")
	jobEditFlags(fs, c, "partition")
}

// jobEditFlags are the fields edit changes, and retry changes as part of the retry (by
// job ids); partition names the flag of the new partition.
func jobEditFlags(fs *flag.FlagSet, c *cli, partition string) {
	fs.Var(&c.verbs.payload, "payload", "new payload (`JSON`, stored as msgpack, as workers decode it)")
	fs.Var(&c.verbs.priority, "priority", "new priority `N` (higher first)")
	fs.Var(&c.verbs.maxAttempts, "max-attempts", "new maximum of attempts `N`")
	fs.Var(&c.verbs.partition, partition, "new partition `P` (\"\" for none)")
	fs.Var(&c.verbs.tags, "tags", "new tags `a,b`, comma-separated (\"\" for none)")
}

func deleteFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	bulkFlags(fs, c)
}

func quarantineFlags(fs *flag.FlagSet, c *cli) {
	jsonFlag(fs, c)
	fs.BoolVar(&c.verbs.retry, "retry", false, "with release: also retry the job that crashed into the limit")
}

// jsonTime is how the commands' JSON output writes a time: RFC 3339 with milliseconds, in
// UTC (as why, workers, wf and the dashboard's documents write theirs), or null when there
// is none. The store's times come in the machine's local zone: written as they come, the
// same document would read differently from one host to another.
func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}

// verbFailure is a job the verb could not act on.
type verbFailure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// retried is one retried job in -json output.
type retried struct {
	ID          string  `json:"id"`
	State       string  `json:"state"`
	ScheduledAt *string `json:"scheduled_at"`
	Lifted      bool    `json:"lifted_quarantine"`
	Released    int     `json:"released_held"`
	// Held: the job is available but held back by its quarantined fingerprint.
	Held bool `json:"held"`
}

func retriedOf(r inspector.RetryResult) retried {
	return retried{ID: r.JobID, State: string(r.State), ScheduledAt: jsonTime(r.ScheduledAt), Lifted: r.Lifted, Released: r.Released}
}

// parseAt reads -at: an RFC 3339 time, or a duration after the store's now.
func (c *cli) parseAt(ctx context.Context) (time.Time, error) {
	v := c.verbs.at.v
	if d, err := humandur.Parse(v); err == nil { // 90s, 2h, or 2d as the tables print it
		now, err := c.insp.Now(ctx)
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usagef("-at %q is neither an RFC 3339 time nor a duration", short(v))
	}
	return t, nil
}

// printJSON writes v as the command's one JSON document.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// failLine reports one job a verb could not act on, on stderr.
func (c *cli) failLine(id string, err error) verbFailure {
	msg := strings.ReplaceAll(err.Error(), id, short(id))
	if !c.verbs.json {
		fmt.Fprintf(c.stderr, "%s: %s\n", short(id), msg)
	}
	return verbFailure{ID: id, Error: msg}
}

func cmdRetry(ctx context.Context, c *cli, args []string) error {
	if c.bulk.byFilter() {
		o := &c.verbs
		if o.at.set {
			return usagef("-at goes with job ids, not with -state")
		}
		if o.payload.set || o.priority.set || o.maxAttempts.set || o.partition.set || o.tags.set {
			return usagef("the edit flags go with job ids, not with -state")
		}
		return cmdBulk(ctx, c, args, bulkVerb{"retry", "retried", c.insp.BulkRetry})
	}
	if err := c.bulk.byIDs(); err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("name at least one job id")
	}
	opts := &inspector.RetryOptions{KeepAttempts: c.verbs.keepAttempts}
	if c.verbs.at.set {
		at, err := c.parseAt(ctx)
		if err != nil {
			return err
		}
		opts.At = at
	}
	return eachJob(c, args, "retried", func(id string) (retried, string, error) {
		e, err := c.jobEdit(ctx, id)
		if err != nil {
			return retried{}, "", err
		}
		opts.Edit = nil
		if e != (inspector.JobEdit{}) {
			opts.Edit = &e
		}
		r, err := c.insp.Retry(ctx, id, opts)
		if u := byFlag(err, editFlagNames("opts.Edit.", "-set-partition")); u != err {
			return retried{}, "", u // the same for every id: none was retried
		}
		if d := (*headgate.DuplicateError)(nil); errors.As(err, &d) {
			// "duplicate of job H" alone reads as if the retried job were the duplicate.
			err = fmt.Errorf("its unique key is held by job %q (%s); retry it once that job is finished or deleted: %w",
				short(d.ExistingID), d.State, err)
		}
		if err != nil {
			return retried{}, "", err
		}
		rt := retriedOf(r)
		if r.State == headgate.StateAvailable && !r.Lifted {
			// Retried into a fingerprint still quarantined, the job waits, held: "available"
			// alone would have the operator wait for it to run.
			if d, err := c.insp.Job(ctx, id); err == nil && d.Job.Held {
				rt.Held = true
				return rt, fmt.Sprintf("retried %s: available, held while its fingerprint %s is quarantined "+
					"(headgate quarantine release %s)", id, d.Job.Fingerprint, d.Job.Fingerprint), nil
			}
		}
		return rt, fmt.Sprintf("retried %s: %s %s", id, r.State, exactTime(r.ScheduledAt)), nil
	}, func(done []retried, failed []verbFailure) any {
		return struct {
			Retried []retried     `json:"retried"`
			Failed  []verbFailure `json:"failed"`
		}{done, failed}
	})
}

// eachJob runs a verb on job ids: act acts on one and returns what -json reports of it
// and the line that says it; doc makes the -json document of what was done and what
// failed. Each failure is listed (failLine) and the verb ends in an error that counts
// them. A usage error stops the verb at once: it would be the same for every id.
func eachJob[T any](c *cli, args []string, past string, act func(id string) (T, string, error),
	doc func(done []T, failed []verbFailure) any) error {
	done, failed := []T{}, []verbFailure{}
	seen := make(map[string]bool, len(args))
	for _, id := range args {
		if seen[id] { // an id given twice is one job: acting again would report a failure
			continue
		}
		seen[id] = true
		r, line, err := act(id)
		if u := (*usageError)(nil); errors.As(err, &u) {
			return err
		}
		if err != nil {
			failed = append(failed, c.failLine(id, err))
			continue
		}
		done = append(done, r)
		if !c.verbs.json {
			fmt.Fprintln(c.stdout, line)
		}
	}
	if c.verbs.json {
		if err := c.printJSON(doc(done, failed)); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d job(s) not %s", len(failed), len(seen), past)
	}
	return nil
}

func cmdEdit(ctx context.Context, c *cli, args []string) error {
	if len(args) != 1 {
		return usagef("name one job id")
	}
	id := args[0]
	e, err := c.jobEdit(ctx, id)
	if err != nil {
		return err
	}
	if c.verbs.at.set {
		at, err := c.parseAt(ctx)
		if err != nil {
			return err
		}
		e.ScheduledAt = &at
	}
	if e == (inspector.JobEdit{}) {
		return usagef("give at least one of -payload, -priority, -max-attempts, -at, -partition, -tags")
	}
	r, err := c.insp.Edit(ctx, id, e)
	if err != nil {
		return byFlag(err, editFlagNames("edit.", "-partition"))
	}
	if c.verbs.json {
		return c.printJSON(struct {
			ID          string  `json:"id"`
			State       string  `json:"state"`
			ScheduledAt *string `json:"scheduled_at"`
		}{id, string(r.State), jsonTime(r.ScheduledAt)})
	}
	fmt.Fprintf(c.stdout, "edited %s: %s %s\n", id, r.State, exactTime(r.ScheduledAt))
	return nil
}

// jobEdit is the edit the flags -payload, -priority, -max-attempts, -partition and -tags
// ask of job id (a payload is encoded as the job's is).
func (c *cli) jobEdit(ctx context.Context, id string) (inspector.JobEdit, error) {
	var e inspector.JobEdit
	o := &c.verbs
	if o.payload.set {
		d, err := c.insp.Job(ctx, id)
		if err != nil {
			return e, err
		}
		b, err := payloadFromJSON(o.payload.v, d.Job.Payload)
		if err != nil {
			return e, err
		}
		e.Payload = &b
	}
	if o.priority.set {
		n, err := strconv.ParseInt(o.priority.v, 10, 32)
		if err != nil {
			return e, usagef("-priority %q is not a 32-bit integer", short(o.priority.v))
		}
		e.Priority = new(int32(n))
	}
	if o.maxAttempts.set {
		n, err := strconv.Atoi(o.maxAttempts.v)
		if err != nil {
			return e, usagef("-max-attempts %q is not an integer", short(o.maxAttempts.v))
		}
		e.MaxAttempts = new(n)
	}
	if o.partition.set {
		e.PartitionKey = new(o.partition.v)
	}
	if o.tags.set {
		tags := []string{}
		if o.tags.v != "" {
			tags = strings.Split(o.tags.v, ",")
		}
		e.Tags = &tags
	}
	return e, nil
}

func cmdDelete(ctx context.Context, c *cli, args []string) error {
	if c.bulk.byFilter() {
		return cmdBulk(ctx, c, args, bulkVerb{"delete", "deleted", c.insp.BulkDelete})
	}
	if err := c.bulk.byIDs(); err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("name at least one job id")
	}
	type deleted struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	return eachJob(c, args, "deleted", func(id string) (deleted, string, error) {
		st, err := c.insp.Delete(ctx, id)
		if err != nil {
			return deleted{}, "", err
		}
		return deleted{id, string(st)}, fmt.Sprintf("deleted %s (was %s)", id, st), nil
	}, func(done []deleted, failed []verbFailure) any {
		return struct {
			Deleted []deleted     `json:"deleted"`
			Failed  []verbFailure `json:"failed"`
		}{done, failed}
	})
}

// cmdQuarantineRelease is the quarantine command with -retry and -json for release;
// listing and a plain release are cmdQuarantine's.
func cmdQuarantineRelease(ctx context.Context, c *cli, args []string) error {
	releasing := len(args) == 2 && args[0] == "release"
	if c.verbs.retry && !releasing {
		return usagef("-retry goes with release FINGERPRINT")
	}
	if !c.verbs.json && !c.verbs.retry {
		return cmdQuarantine(ctx, c, args)
	}
	if !releasing {
		if len(args) != 0 {
			return usagef("want no arguments, or release FINGERPRINT")
		}
		q, err := c.insp.Quarantined(ctx)
		if err != nil {
			return err
		}
		type fp struct {
			Fingerprint string `json:"fingerprint"`
			JobID       string `json:"job_id"`
			Held        int64  `json:"held"`
		}
		out := struct {
			Quarantined []fp `json:"quarantined"`
		}{Quarantined: []fp{}}
		for _, f := range q {
			out.Quarantined = append(out.Quarantined, fp{f.Fingerprint, f.JobID, f.Held})
		}
		return c.printJSON(out)
	}
	fpName := args[1]
	if err := c.requireQuarantined(ctx, fpName); err != nil {
		return err
	}
	out := struct {
		Fingerprint string   `json:"fingerprint"`
		Released    int      `json:"released_held"`
		Retried     *retried `json:"retried"`
	}{Fingerprint: fpName}
	if c.verbs.retry {
		r, err := c.insp.ReleaseQuarantineAndRetry(ctx, fpName)
		if errors.As(err, new(*headgate.DuplicateError)) || errors.As(err, new(*headgate.BackpressureError)) {
			// The retry was refused, and with it the release: say so, or the operator
			// takes the fingerprint for released.
			return fmt.Errorf("fingerprint %s stays quarantined, nothing released or retried: %w "+
				"(release it without -retry, or make room and run this again)", short(fpName), err)
		}
		if err != nil {
			return err
		}
		out.Released = r.Released
		if r.State != "" {
			rt := retriedOf(r)
			out.Retried = &rt
		}
	} else {
		n, err := c.insp.ReleaseQuarantine(ctx, fpName)
		if err != nil {
			return err
		}
		out.Released = n
	}
	if c.verbs.json {
		return c.printJSON(out)
	}
	fmt.Fprintf(c.stdout, "released fingerprint %s: %d held job(s) returned to admission\n", fpName, out.Released)
	if out.Retried != nil {
		fmt.Fprintf(c.stdout, "retried %s: %s\n", out.Retried.ID, out.Retried.State)
	} else {
		fmt.Fprintln(c.stdout, "no quarantined job to retry")
	}
	return nil
}

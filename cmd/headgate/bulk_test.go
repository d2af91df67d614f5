package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

type bulkJSON struct {
	Verb    string  `json:"verb"`
	DryRun  bool    `json:"dry_run"`
	Moved   int64   `json:"moved"`
	Skipped int64   `json:"skipped"`
	Batches int     `json:"batches"`
	Cursor  *string `json:"cursor"`
	Error   *string `json:"error"`
}

// dump is every key of the test namespace with its type and content, sorted: two dumps
// are equal when nothing was written in between.
func (b *testBundle) dump(t *testing.T) string {
	t.Helper()
	rdb := b.store.Client()
	keys, err := rdb.Keys(b.ctx, headgate.KeyPattern(cmp.Or(b.ns, testNS))).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var out strings.Builder
	for _, k := range keys {
		typ, err := rdb.Type(b.ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "hash":
			v, err = rdb.HGetAll(b.ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(b.ctx, k, 0, -1).Result()
		case "set":
			var m []string
			m, err = rdb.SMembers(b.ctx, k).Result()
			slices.Sort(m)
			v = m
		case "list":
			v, err = rdb.LRange(b.ctx, k, 0, -1).Result()
		default:
			v, err = rdb.Get(b.ctx, k).Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s %s %v\n", k, typ, v)
	}
	return out.String()
}

func TestBulkCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var jobs []headgate.Envelope
	for i := range 30 {
		e := headgate.Envelope{ID: fmt.Sprintf("j%02d", i), Kind: "email", PartitionKey: "tenant-1"}
		if i >= 20 {
			e.Kind, e.PartitionKey = "report", "tenant-2"
		}
		jobs = append(jobs, e)
	}
	b.enqueue(t, jobs...)

	// A dry run counts and writes nothing.
	before := b.dump(t)
	var out bulkJSON
	b.runJSON(t, exitOK, &out, "cancel", "-state", "available", "-partition", "tenant-1", "-dry-run")
	if out != (bulkJSON{Verb: "cancel", DryRun: true, Moved: 20, Batches: 1}) {
		t.Errorf("cancel -dry-run -json = %+v", out)
	}
	if after := b.dump(t); after != before {
		t.Errorf("a dry run changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	code, stdout, stderr := b.run(t, "cancel", "-state", "available", "-partition", "tenant-1", "-dry-run")
	if code != exitOK || stdout != "dry run: 20 job(s) would be cancelled, 0 skipped; nothing written\n" ||
		stderr != "cancel: batch 1: 20 would be cancelled, 0 skipped\n" {
		t.Errorf("cancel -dry-run: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}

	// The run: a progress line on stderr, the totals on stdout.
	// The inspector's audit line of the run follows (TestOperatorWriteLogged).
	code, stdout, stderr = b.run(t, "cancel", "-state", "available", "-partition", "tenant-1")
	if code != exitOK || stdout != "20 job(s) cancelled, 0 skipped, in 1 batch(es)\n" ||
		!strings.HasPrefix(stderr, "cancel: batch 1: 20 cancelled, 0 skipped\ntime=") ||
		!strings.Contains(stderr, `msg="jobs cancelled by filter" namespace=cli-test queue=default state=available`) {
		t.Errorf("cancel by partition: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	b.runJSON(t, exitOK, &out, "retry", "-state", "cancelled", "-kind", "email")
	if out.Verb != "retry" || out.Moved != 20 || out.DryRun || out.Cursor != nil || out.Error != nil {
		t.Errorf("retry -json = %+v", out)
	}
	// A tenant's purge.
	b.runJSON(t, exitOK, &out, "delete", "-state", "available", "-partition", "tenant-2")
	if out.Verb != "delete" || out.Moved != 10 {
		t.Errorf("delete -partition -json = %+v", out)
	}
	if _, err := b.store.GetJob(b.ctx, "j25"); err == nil {
		t.Error("j25 of the purged tenant is still stored")
	}
	if j, err := b.store.GetJob(b.ctx, "j05"); err != nil || j.State != headgate.StateAvailable {
		t.Errorf("j05 = %+v, %v; want it available again", j, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cancel", "j01", "-state", "available"}, exitUsage, "not both"},
		{[]string{"retry", "-state", "cancelled", "-at", "1h"}, exitUsage, "-at goes with job ids"},
		// A bad value is a usage error named by its flag, not by the store's field.
		{[]string{"retry", "-state", "available"}, exitUsage, `headgate retry: -state "available": only archived`},
		{[]string{"delete", "-state", "running", "-json"}, exitUsage, `headgate delete: -state "running": only pending`},
		{[]string{"cancel", "-state", "available", "-cursor", "x"}, exitUsage, `headgate cancel: -cursor "x" is not a cursor`},
		{[]string{"cancel", "-state", "available", "-older-than", "-1h"}, exitUsage, "headgate cancel: -older-than is negative"},
		{[]string{"delete", "-state", "available", "-tag", "{t}"}, exitUsage, `headgate delete: -tag "{t}" contains a brace`},
	} {
		code, out, errOut := b.run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("headgate %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}

// TestByIDRefusesFilterFlags: -dry-run, -cursor and the filter flags belong to a verb by
// filter. Given with job ids they were ignored and the verb acted, so a dry run of
// "delete ID -dry-run" deleted the job: now they are a usage error and nothing changes.
func TestByIDRefusesFilterFlags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", Kind: "email"})
	for _, verb := range []string{"cancel", "delete", "retry"} {
		for _, flags := range [][]string{{"-dry-run"}, {"-cursor", "x"}, {"-kind", "email"}, {"-partition", "p"},
			{"-tag", "t"}, {"-fingerprint", "f"}, {"-older-than", "1h"}, {"-queue", "mail"}} {
			args := append([]string{verb, "a"}, flags...)
			code, out, errOut := b.run(t, args...)
			if code != exitUsage || !strings.Contains(errOut, flags[0]+" goes with -state") || out != "" {
				t.Errorf("headgate %v: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out, errOut, exitUsage,
					flags[0]+" goes with -state")
			}
		}
	}
	if j, err := b.store.GetJob(b.ctx, "a"); err != nil || j.State != headgate.StateAvailable {
		t.Errorf("a after the refused verbs: %+v, %v; want it available, untouched", j, err)
	}
	// -queue default is the flag's default: by id it changes nothing and is accepted.
	requireOutput(t, b.mustRun(t, "cancel", "a", "-queue", "default"), "cancelled a\n")
}

// TestBulkRetryRefusedByBackpressure: a retry by filter whose first batch the queue's
// enqueue limit refuses writes nothing and says so: backpressure, the queue's numbers,
// nothing retried, and the command that runs it again once there is room.
func TestBulkRetryRefusedByBackpressure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a1", Kind: "email", Queue: "mail"}, headgate.Envelope{ID: "a2", Kind: "email", Queue: "mail"},
		headgate.Envelope{ID: "a3", Kind: "email", Queue: "mail"}, headgate.Envelope{ID: "w1", Kind: "email", Queue: "mail"})
	b.mustRun(t, "cancel", "a1", "a2", "a3")
	b.mustRun(t, "limit", "mail", "2")
	before := b.dump(t)
	code, stdout, stderr := b.run(t, "retry", "-queue", "mail", "-state", "cancelled", "-keep-attempts")
	resume := `headgate -namespace cli-test retry -queue "mail" -state "cancelled" -keep-attempts`
	want := "retry: batch 1 refused by backpressure: queue mail holds 1 unfinished job(s) of its enqueue limit of 2 " +
		"and the batch would add 3; nothing retried\n" +
		"make room (let the queue drain, or raise its limit: headgate limit mail N|off), then resume: " + resume + "\n"
	if code != exitError || stdout != "" || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, `queue "mail" is full`) {
		t.Errorf("retry refused by the limit: exit %d\nstdout %q\nstderr %q\nwant stderr starting %q", code, stdout, stderr, want)
	}
	if after := b.dump(t); after != before {
		t.Errorf("a refused retry changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	var out bulkJSON
	b.runJSON(t, exitError, &out, "retry", "-queue", "mail", "-state", "cancelled")
	if out.Moved != 0 || out.Batches != 0 || out.Cursor != nil || out.Error == nil || !strings.Contains(*out.Error, "is full") {
		t.Errorf("retry -json refused by the limit = %+v", out)
	}
	// Made room, the command printed runs the retry.
	b.mustRun(t, "limit", "mail", "off")
	args := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(resume, "headgate "), `"`, ""))
	if code, stdout, _ := b.run(t, args...); code != exitOK || stdout != "3 job(s) retried, 0 skipped, in 1 batch(es)\n" {
		t.Errorf("headgate %v after lifting the limit: exit %d, stdout %q", args, code, stdout)
	}
}

// TestBulkOutlastsTimeout: -timeout bounds each batch of a run by filter, not the run. A
// purge that took longer than -timeout stopped at the deadline with "Redis did not
// answer", though Redis answered every batch: the run's calls now get a context that
// neither the command's deadline nor its end cancels (the client's per-call timeouts
// bound each call).
func TestBulkOutlastsTimeout(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr}
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	bulkFlags(fs, c)
	if err := fs.Parse([]string{"-state", "available", "-partition", "gone"}); err != nil {
		t.Fatal(err)
	}
	parent, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	verb := bulkVerb{name: "delete", done: "deleted",
		run: func(ctx context.Context, f inspector.JobFilter, _ *inspector.BulkOptions) (inspector.BulkResult, error) {
			cancel() // the command's deadline passes while the run goes on
			if d, ok := ctx.Deadline(); ok {
				t.Errorf("the run's context has the command's deadline %s", d)
			}
			if err := ctx.Err(); err != nil {
				t.Errorf("the run's context ended with the command's: %v", err)
			}
			if f.Partition != "gone" {
				t.Errorf("filter %+v, want partition gone", f)
			}
			return inspector.BulkResult{Moved: 1001, Batches: 2}, nil
		}}
	if err := cmdBulk(parent, c, nil, verb); err != nil || stdout.String() != "1001 job(s) deleted, 0 skipped, in 2 batch(es)\n" {
		t.Errorf("a run past the command's deadline: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
}

// A run by filter against a Redis that never answers still gives up after -timeout: its
// calls are bounded one by one.
func TestBulkTimeoutNamesAddress(t *testing.T) {
	t.Parallel()
	l := silentRedis(t)
	var out, errOut bytes.Buffer
	t0 := time.Now()
	code := run([]string{"-redis", l.Addr().String(), "-namespace", "n", "-timeout", "200ms", "cancel", "-state", "available"},
		&out, &errOut)
	if got := errOut.String(); code != exitError || !strings.Contains(got, "Redis at "+l.Addr().String()+" did not answer (-timeout 200ms)") {
		t.Errorf("silent server: exit %d, stderr %q; want it to name %s", code, got, l.Addr())
	}
	// The call that got no answer may have been applied: the stop line says so.
	if got := errOut.String(); !strings.Contains(got, "cancel stopped before its first batch: nothing cancelled (and the batch in flight may have been applied, uncounted); run it again: headgate -namespace n cancel") {
		t.Errorf("silent server: stderr %q; want the stop line to say the batch in flight may have been applied", got)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("the run took %s to give up, want about -timeout", took)
	}
}

// TestRetryUniqueHolderSaysWhy: a retry refused or skipped because another job holds the
// unique key says so. By id the refusal read "duplicate of job holder", as if the
// retried job were the duplicate; by filter a bare "1 skipped" left the operator
// guessing.
func TestRetryUniqueHolderSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "a", UniqueKey: "u"}, headgate.Envelope{ID: "b"})
	b.mustRun(t, "cancel", "a", "b")
	b.enqueue(t, headgate.Envelope{ID: "holder", UniqueKey: "u"})
	code, stdout, stderr := b.run(t, "retry", "a")
	if code != exitError || stdout != "" || !strings.HasPrefix(stderr,
		`a: its unique key is held by job "holder" (available); retry it once that job is finished or deleted: headgate: duplicate of job "holder"`) {
		t.Errorf("retry a with its key held: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	var out struct {
		Retried []retriedJSON `json:"retried"`
		Failed  []failedJSON  `json:"failed"`
	}
	b.runJSON(t, exitError, &out, "retry", "a")
	if len(out.Failed) != 1 || !strings.HasPrefix(out.Failed[0].Error, `its unique key is held by job "holder"`) {
		t.Errorf("retry a -json: %+v", out)
	}
	for _, dry := range [][]string{{"-dry-run"}, nil} {
		args := append([]string{"retry", "-state", "cancelled"}, dry...)
		code, stdout, _ := b.run(t, args...)
		if code != exitOK || !strings.HasSuffix(stdout, "1 skipped"+map[bool]string{true: "; nothing written", false: ", in 1 batch(es)"}[dry != nil]+
			"\nskipped: jobs whose unique key another job holds, jobs that left the state since the run began, or whose data could not be read\n") {
			t.Errorf("headgate %v: exit %d, stdout %q", args, code, stdout)
		}
	}
	if j, err := b.store.GetJob(b.ctx, "b"); err != nil || j.State != headgate.StateAvailable {
		t.Errorf("b after the retry by filter: %+v, %v; want it available", j, err)
	}
}

// TestBulkRetryDryRunMeetsTheLimit: a dry run stops at the queue's enqueue limit where the
// run would, and says what it counted as what would be, not as done: it said "1500 job(s)
// would be retried" of a run that the limit stops after 1000.
func TestBulkRetryDryRunMeetsTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var jobs []headgate.Envelope
	for i := range 1500 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("j%04d", i), Queue: "mail"})
	}
	b.enqueue(t, jobs...)
	b.mustRun(t, "cancel", "-queue", "mail", "-state", "available")
	b.mustRun(t, "limit", "mail", "1200")
	before := b.dump(t)
	code, stdout, stderr := b.run(t, "retry", "-queue", "mail", "-state", "cancelled", "-dry-run")
	want := "retry: batch 1: 1000 would be retried, 0 skipped\n" +
		"retry: batch 2 refused by backpressure: queue mail would hold 1000 unfinished job(s) of its enqueue limit of 1200 " +
		"and the batch would add 500; 1000 job(s) would be retried before it\n"
	if code != exitError || stdout != "" || !strings.HasPrefix(stderr, want) {
		t.Errorf("retry -dry-run past the limit: exit %d\nstdout %q\nstderr %q\nwant stderr starting %q", code, stdout, stderr, want)
	}
	if after := b.dump(t); after != before {
		t.Errorf("a dry run changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	var dry, run bulkJSON
	b.runJSON(t, exitError, &dry, "retry", "-queue", "mail", "-state", "cancelled", "-dry-run")
	b.runJSON(t, exitError, &run, "retry", "-queue", "mail", "-state", "cancelled")
	if !dry.DryRun || dry.Moved != 1000 || run.Moved != dry.Moved || run.Batches != dry.Batches ||
		dry.Cursor == nil || run.Cursor == nil || *run.Cursor != *dry.Cursor {
		t.Errorf("dry run -json = %+v, the run = %+v; want the dry run to say what the run did", dry, run)
	}
}

// TestCursorOfAnotherFilter: a -cursor printed by a run (or a page) of one filter, given
// with another, is refused with a usage error that names the flags it was given with and
// writes nothing: taken as it was, it skipped the other filter's jobs before its
// position. With its own filter it resumes.
func TestCursorOfAnotherFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var jobs []headgate.Envelope
	for i := range 6 {
		p := "t1"
		if i >= 3 {
			p = "t2"
		}
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("j%d", i), Kind: "email", PartitionKey: p})
	}
	b.enqueue(t, jobs...)
	t1 := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t1"}
	stop, cancel := context.WithCancel(b.ctx)
	res, err := b.store.BulkCancel(stop, t1, &headgate.BulkOptions{BatchSize: 1, Progress: func(headgate.BulkProgress) { cancel() }})
	cancel()
	if !errors.Is(err, context.Canceled) || res.Moved != 1 || res.Cursor == "" {
		t.Fatalf("interrupted run of t1 = %+v, %v; want 1 cancelled and a cursor", res, err)
	}
	page, err := b.store.ListJobs(b.ctx, t1, headgate.Page{Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatalf("first page of t1 = %+v, %v", page, err)
	}
	before := b.dump(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "-state", "available", "-partition", "t2", "-cursor", res.Cursor},
			`headgate cancel: -cursor was made for another filter than -queue "default" -state "available" -partition "t2" ` +
				`(with this one it would skip jobs); start without -cursor, or give the -queue, -state, -kind, -partition, ` +
				`-tag, -fingerprint and -older-than of the command that printed it`},
		{[]string{"delete", "-state", "available", "-partition", "t1", "-older-than", "1h", "-dry-run", "-json", "-cursor", res.Cursor},
			`headgate delete: -cursor was made for another filter than -queue "default" -state "available" -partition "t1" -older-than 1h0m0s `},
		{[]string{"jobs", "-state", "available", "-kind", "email", "-cursor", page.Next},
			`headgate jobs: -cursor was made for another filter than -queue "default" -state "available" -kind "email" `},
	} {
		code, out, errOut := b.run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("headgate %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
	if after := b.dump(t); after != before {
		t.Errorf("a refused cursor changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// With its own filter, the run resumes and leaves t2 alone; the listing goes on.
	requireOutput(t, b.mustRun(t, "cancel", "-state", "available", "-partition", "t1", "-cursor", res.Cursor),
		"2 job(s) cancelled, 0 skipped, in 1 batch(es)\n")
	if n, err := b.store.PartitionCounts(b.ctx, headgate.QueueDefault, "t2"); err != nil || n[headgate.StateAvailable] != 3 {
		t.Errorf("t2's counts after t1's run = %v, %v; want its 3 jobs available", n, err)
	}
	if code, _, errOut := b.run(t, "jobs", "-state", "available", "-partition", "t1", "-cursor", page.Next); code != exitOK {
		t.Errorf("jobs with its own filter's cursor: exit %d, stderr %q", code, errOut)
	}
}

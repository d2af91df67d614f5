package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // as main does: failed dials are reported once, by the command
	os.Exit(m.Run())
}

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const testNS = "cli-test"

type testBundle struct {
	ctx   context.Context
	url   string
	store *headgate.Store
	ns    string // the namespace commands run in; testNS when empty
	// leases numbers the lease ids of admit: each admission needs one of its own.
	leases int
}

// setup starts a miniredis with the store clock of testNS frozen at epoch.
func setup(t *testing.T) *testBundle {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: testNS, CrashLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	return &testBundle{ctx: ctx, url: "redis://" + mr.Addr(), store: store}
}

func (b *testBundle) enqueue(t *testing.T, jobs ...headgate.Envelope) {
	t.Helper()
	for i := range jobs {
		if jobs[i].Kind == "" {
			jobs[i].Kind = "test"
		}
	}
	if _, err := b.store.Enqueue(b.ctx, jobs...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

// admit admits up to capacity jobs of queue as worker w, on a lease of d under lease id
// l1, l2, ..., and fails the test unless it got want.
func (b *testBundle) admit(t *testing.T, queue string, capacity, want int, d time.Duration) []headgate.Claim {
	t.Helper()
	b.leases++
	claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: fmt.Sprint("l", b.leases),
		Queues: []string{queue}, Capacity: capacity, Lease: d})
	if err != nil || len(claims) != want {
		t.Fatalf("admit from %s: %d claims, %v; want %d", queue, len(claims), err, want)
	}
	return claims
}

// run runs the command line with -redis and -namespace of the bundle.
func (b *testBundle) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"-redis", b.url, "-namespace", cmp.Or(b.ns, testNS)}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRun runs the command line and fails the test unless it exits 0.
func (b *testBundle) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := b.run(t, args...)
	if code != exitOK {
		t.Fatalf("headgate %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// trimLines drops trailing spaces, which tabwriter leaves after the last column.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func requireOutput(t *testing.T, got, want string) {
	t.Helper()
	if got, want := trimLines(got), strings.TrimPrefix(want, "\n"); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

func requireContains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("output does not contain %q:\n%s", w, got)
		}
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustRun(t, "stats") // an empty namespace is fine
	b.enqueue(t,
		headgate.Envelope{ID: "a1", Queue: "mail"},
		headgate.Envelope{ID: "a2", Queue: "mail", ScheduledAt: epoch.Add(time.Hour)},
		headgate.Envelope{ID: "b1", Queue: "reports", Pending: true},
	)
	b.mustRun(t, "pause", "mail")
	b.mustRun(t, "limit", "reports", "1")
	requireOutput(t, b.mustRun(t, "stats"), `
QUEUE    STATUS  LIMIT     UNFINISHED  PENDING  SCHEDULED  AVAILABLE  HELD  RUNNING  RETRYABLE  COMPLETED  ARCHIVED  CANCELLED  UNDECODABLE  QUARANTINED  COMPLETED/1H  FAILED/1H
mail     paused  -         2           0        1          1          0     0        0          0          0         0          0            0            -             -
reports  active  1 (full)  1           1        0          0          0     0        0          0          0         0          0            0            -             -
(total)                    3           1        1          1          0     0        0          0          0         0          0            0            -             -

no throughput sampled in the last hour: a worker's series duty samples it once a minute

no live worker serves 1 queue(s) with work: mail (see headgate workers)
`)

	// The last hour's throughput, from the series the duty samples a minute apart: the
	// acks between the base sample and the newest count.
	record := func() {
		t.Helper()
		if _, err := b.store.RecordSeries(b.ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := b.store.AdvanceClock(b.ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	record()
	b.mustRun(t, "release", "b1")
	b.mustRun(t, "limit", "reports", "off")
	b.enqueue(t, headgate.Envelope{ID: "b2", Queue: "reports", MaxAttempts: 1})
	for _, c := range b.admit(t, "reports", 2, 2, time.Minute) {
		o := map[string]headgate.Outcome{"b1": headgate.OutcomeSuccess, "b2": headgate.OutcomeRetry}[c.Envelope.ID]
		if _, err := b.store.Ack(b.ctx, c.LeaseRef(), o, &headgate.AckOpts{Error: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	record()
	requireOutput(t, b.mustRun(t, "stats"), `
QUEUE    STATUS  LIMIT  UNFINISHED  PENDING  SCHEDULED  AVAILABLE  HELD  RUNNING  RETRYABLE  COMPLETED  ARCHIVED  CANCELLED  UNDECODABLE  QUARANTINED  COMPLETED/1H  FAILED/1H
mail     paused  -      2           0        1          1          0     0        0          0          0         0          0            0            0             0
reports  active  -      0           0        0          0          0     0        0          0          1         0          0            0            1             1
(total)                 2           0        1          1          0     0        0          0          1         0          0            0            1             1

no live worker serves 1 queue(s) with work: mail (see headgate workers)
`)
	var doc statsJSON
	b.runJSON(t, exitOK, &doc, "stats")
	if len(doc.Queues) != 2 || doc.Queues[0].LastHour == nil || *doc.Queues[0].LastHour != (outcomesJSON{}) ||
		doc.Queues[1].LastHour == nil || *doc.Queues[1].LastHour != (outcomesJSON{Completed: 1, Failed: 1}) {
		t.Errorf("stats -json last_hour: %+v", doc.Queues)
	}
	// -json says what the table's last line does: mail has work and no live worker.
	if q := doc.Queues[0]; q.Queue != "mail" || q.LiveWorkers != 0 || !q.Unserved {
		t.Errorf("stats -json mail: %d live workers, unserved %v; want 0, true", q.LiveWorkers, q.Unserved)
	}
	if q := doc.Queues[1]; q.Queue != "reports" || q.Unserved {
		t.Errorf("stats -json reports: unserved %v, want false (it has no work)", q.Unserved)
	}
	// A live worker of mail serves it.
	if _, err := b.store.Heartbeat(b.ctx, headgate.Heartbeat{ID: "w1", Queues: []string{"mail"}, Liveness: time.Minute}); err != nil {
		t.Fatal(err)
	}
	b.runJSON(t, exitOK, &doc, "stats")
	if q := doc.Queues[0]; q.Queue != "mail" || q.LiveWorkers != 1 || q.Unserved {
		t.Errorf("stats -json mail with a live worker: %d live workers, unserved %v; want 1, false", q.LiveWorkers, q.Unserved)
	}
}

func TestJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t,
		headgate.Envelope{ID: "j1", Queue: "mail", Kind: "email", PartitionKey: "tenant-1", Priority: 3, Tags: []string{"vip"}},
		headgate.Envelope{ID: "j2", Queue: "mail", Kind: "email", ScheduledAt: epoch.Add(time.Hour)},
		headgate.Envelope{ID: "j4", Queue: "mail", Kind: "digest", Fingerprint: "fp-1"},
		headgate.Envelope{ID: "j3", Queue: "reports", Kind: "report"},
	)
	requireOutput(t, b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-oldest"), `
ID  KIND    QUEUE  STATE      FAILED  PRIORITY  PARTITION  SCHEDULED
j1  email   mail   available  0/25    3         tenant-1   2030-01-02 03:04:05 UTC
j4  digest  mail   available  0/25    0         -          2030-01-02 03:04:05 UTC
`)
	requireOutput(t, b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-kind", "email", "-limit", "5"), `
ID  KIND   QUEUE  STATE      FAILED  PRIORITY  PARTITION  SCHEDULED
j1  email  mail   available  0/25    3         tenant-1   2030-01-02 03:04:05 UTC
`)
	for _, filter := range [][]string{{"-partition", "tenant-1"}, {"-tag", "vip"}} {
		out := b.mustRun(t, append([]string{"jobs", "-queue", "mail", "-state", "available"}, filter...)...)
		if !strings.Contains(out, "j1") || strings.Contains(out, "j4") {
			t.Errorf("jobs %v:\n%s", filter, out)
		}
	}
	out := b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-fingerprint", "fp-1")
	if !strings.Contains(out, "j4") || strings.Contains(out, "j1") {
		t.Errorf("jobs -fingerprint fp-1:\n%s", out)
	}
	out = b.mustRun(t, "jobs", "-queue", "mail", "-state", "scheduled")
	if !strings.Contains(out, "j2") || strings.Contains(out, "j1") {
		t.Errorf("jobs -state scheduled:\n%s", out)
	}
	requireContains(t, b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-kind", "nothing"), "no matching jobs")

	// Pages: the command for the next page is printed, and it continues the listing.
	out = b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-limit", "1")
	requireContains(t, out, "j4  digest", "more: headgate -namespace cli-test jobs -queue \"mail\" -state \"available\" -limit 1 -cursor ")
	cursor := strings.TrimSpace(out[strings.LastIndex(out, "-cursor ")+len("-cursor "):])
	out = b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-limit", "1", "-cursor", cursor)
	if !strings.Contains(out, "j1  email") || strings.Contains(out, "j4") || strings.Contains(out, "more:") {
		t.Errorf("second page:\n%s", out)
	}

	// -json: one document, parsed back.
	var doc struct {
		Jobs []struct {
			ID, Kind, State, Partition string
			Tags                       []string
		}
		Next string
	}
	if err := json.Unmarshal([]byte(b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-oldest", "-json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != 2 || doc.Jobs[0].ID != "j1" || doc.Jobs[0].Partition != "tenant-1" ||
		!slices.Equal(doc.Jobs[0].Tags, []string{"vip"}) || doc.Jobs[1].ID != "j4" || doc.Next != "" {
		t.Errorf("jobs -json = %+v", doc)
	}

	// A bad value is a usage error named by its flag, not by the store's field.
	code, _, errOut := b.run(t, "jobs", "-state", "bogus")
	if code != exitUsage || !strings.HasPrefix(errOut, `headgate jobs: -state "bogus" is not one of pending`) {
		t.Errorf("jobs -state bogus: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "jobs")
	if code != exitUsage || !strings.Contains(errOut, "-state is required") {
		t.Errorf("jobs without -state: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "jobs", "-state", "available", "-cursor", "x")
	if code != exitUsage || !strings.HasPrefix(errOut, `headgate jobs: -cursor "x" is not a cursor`) {
		t.Errorf("jobs -cursor x: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "jobs", "-state", "available", "-oldest", "-newest")
	if code != exitUsage || !strings.Contains(errOut, "exclude each other") {
		t.Errorf("jobs -oldest -newest: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = b.run(t, "jobs", "-limit", "0")
	if code != exitUsage || !strings.Contains(errOut, "-limit 0") {
		t.Errorf("jobs -limit 0: exit %d, stderr %q", code, errOut)
	}
}

// TestJobsEmptyPageGoesOn: a page filtered by two of -partition, -tag and -fingerprint
// may be empty while the listing goes on; it said "no matching jobs" above the next
// page's command, which holds the job.
func TestJobsEmptyPageGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var jobs []headgate.Envelope
	for i := range headgate.ListLimitMax + 1 {
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("a%04d", i), PartitionKey: "p", Tags: []string{"a"}})
	}
	b.enqueue(t, jobs...)
	b.enqueue(t, headgate.Envelope{ID: "b", PartitionKey: "p", Tags: []string{"b"}})
	out := b.mustRun(t, "jobs", "-state", "available", "-partition", "p", "-tag", "b", "-oldest")
	first, more, ok := strings.Cut(out, "\nmore: headgate -namespace cli-test jobs")
	if !ok || first != "no matching jobs on this page, but the listing goes on (filtered by more than one of "+
		"-partition, -tag, -fingerprint, a page looks at 1000 jobs at most)\n" {
		t.Fatalf("an empty page of a listing that goes on:\n%s", out)
	}
	args := strings.Fields(strings.ReplaceAll(more, `"`, ""))
	requireContains(t, b.mustRun(t, append([]string{"jobs"}, args...)...), "\nb ")
	requireOutput(t, b.mustRun(t, "jobs", "-state", "available", "-partition", "q", "-tag", "b"), "no matching jobs\n")
}

func TestJobsNextPage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    jobsOpts
		want string
	}{
		{jobsOpts{limit: 20}, ""},
		{jobsOpts{filter: filterOpts{queue: "q", state: "running", kind: "k", tag: "a b", olderThan: time.Hour}, limit: 5, oldest: true},
			` -queue "q" -state "running" -kind "k" -tag "a b" -older-than 1h0m0s -oldest -limit 5`},
	} {
		if got := tc.o.pageFlags(); got != tc.want {
			t.Errorf("pageFlags(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}

func TestJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	payload, err := msgpack.Marshal(map[string]any{"to": "ada@example.com", "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "j1", Kind: "email", Queue: "mail", Payload: payload, Fingerprint: "fp",
		Tags: []string{"vip"}, Retention: time.Hour, UniqueKey: "u"})
	lease := b.admit(t, "mail", 1, 1, time.Minute)[0].LeaseRef() // lease id l1
	if _, err := b.store.WriteProgress(b.ctx, lease, headgate.Progress{Current: 2, Total: 5, Message: "sending"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.WriteOutput(b.ctx, lease, headgate.Blob{SchemaVersion: 1, Bytes: []byte("half done")}); err != nil {
		t.Fatal(err)
	}
	out := b.mustRun(t, "job", "j1")
	requireContains(t, out,
		"ID:           j1",
		"State:        running",
		"Attempts:     0 failed of 25 (lost leases: 0, snoozes: 0)",
		"Fingerprint:  fp",
		"Tags:         vip",
		"Unique key:   u (until finished)",
		"Lease:        l1, fence 1, expires 2030-01-02 03:05:05.000 UTC (in 1m)",
		`Payload:      {"n":3,"to":"ada@example.com"} (schema 1)`,
		"Progress:     2/5 sending (2030-01-02 03:04:05.000 UTC (now))",
		`Output:       "half done" (schema 1,`,
	)

	if err := b.store.AdvanceClock(b.ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Ack(b.ctx, lease, headgate.OutcomeRetry, &headgate.AckOpts{Error: "smtp 421", Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	out = b.mustRun(t, "-namespace", testNS, "job", "j1") // flags may repeat after the command
	requireContains(t, out,
		"State:        retryable",
		"Attempts:     1 failed of 25 (lost leases: 0, snoozes: 0)",
		"Scheduled:    2030-01-02 03:05:06.000 UTC (in 1m)",
		"Errors and logs (1, oldest first):",
		"1. 2030-01-02 03:04:06.000 UTC (now) retry -> retryable (attempt 1, fence 1, lease l1): smtp 421",
	)

	code, _, errOut := b.run(t, "job", "missing")
	if code != exitError || !strings.Contains(errOut, "job not found") {
		t.Errorf("job missing: exit %d, stderr %q", code, errOut)
	}
	code, _, _ = b.run(t, "job")
	if code != exitUsage {
		t.Errorf("job without an id: exit %d, want %d", code, exitUsage)
	}
}

// A job's error history names the lease each attempt ran under for what it is, in the
// text and in -json (lease_id): the lease id, which is not the id of the worker.
func TestJobErrorsNameTheLease(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, b *testBundle) {
		b.enqueue(t, headgate.Envelope{ID: "j", Queue: "mail"})
		lease := b.admit(t, "mail", 1, 1, time.Minute)[0].LeaseRef() // worker w, lease id l1
		if _, err := b.store.Ack(b.ctx, lease, headgate.OutcomeRetry, &headgate.AckOpts{Error: "smtp 421"}); err != nil {
			t.Fatal(err)
		}
		out := b.mustRun(t, "job", "j")
		requireContains(t, out, "1. 2030-01-02 03:04:05.000 UTC (now) retry -> retryable (attempt 1, fence 1, lease l1): smtp 421")
		if strings.Contains(out, "worker") {
			t.Errorf("job j calls the lease id a worker:\n%s", out)
		}
		var doc struct {
			Errors []map[string]any `json:"errors"`
		}
		if err := json.Unmarshal([]byte(b.mustRun(t, "job", "j", "-json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Errors) != 1 || doc.Errors[0]["lease_id"] != "l1" {
			t.Fatalf("job j -json errors = %v, want one entry with lease_id l1", doc.Errors)
		}
		if w, ok := doc.Errors[0]["worker"]; ok {
			t.Errorf("job j -json errors[0] has worker %v: the lease id is not the worker's", w)
		}
	})
}

func TestCancelPauseLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q"}, headgate.Envelope{ID: "j2", Queue: "q"})

	// Flags after the arguments are parsed too.
	requireOutput(t, b.mustRun(t, "cancel", "j1", "-namespace", testNS), "cancelled j1\n")
	code, out, errOut := b.run(t, "cancel", "j1", "j2")
	if code != exitError || out != "cancelled j2\n" || !strings.Contains(errOut, "j1:") || !strings.Contains(errOut, "cannot be cancelled") {
		t.Errorf("cancel j1 j2: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	requireOutput(t, b.mustRun(t, "pause", "q"), "paused queue q: running jobs finish, new jobs wait\n")
	requireContains(t, b.mustRun(t, "stats"), "q      paused")
	requireOutput(t, b.mustRun(t, "pause", "q"), "queue q is already paused\n")
	requireOutput(t, b.mustRun(t, "resume", "q"), "resumed queue q\n")
	requireOutput(t, b.mustRun(t, "resume", "q"), "queue q is already running\n")

	requireOutput(t, b.mustRun(t, "limit", "q", "5"), "queue q accepts at most 5 unfinished jobs\n")
	requireContains(t, b.mustRun(t, "stats"), "active  5 ")
	requireOutput(t, b.mustRun(t, "limit", "q", "off"), "queue q is unbounded\n")
	if code, _, _ := b.run(t, "limit", "q", "many"); code != exitUsage {
		t.Errorf("limit q many: exit %d, want %d", code, exitUsage)
	}
}

// A negative number given where a count or a duration goes is refused naming the value
// and what is allowed, and nothing is written: a usage error (exit 2), whether the
// command checks the value (limit, rate) or the store's range check does (policy set,
// naming the field as typed). It was taken for an undefined flag ("flag provided but
// not defined: -5").
func TestNegativeValues(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, b *testBundle) {
		b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q"})
		b.mustRun(t, "rate", "smtp", "10", "1s", "20")
		before := b.dump(t)
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"limit", "q", "-5"}, exitUsage, `headgate limit: limit "-5" is not a count of jobs (0 or more) or off`},
			{[]string{"limit", "q", "-create", "-5"}, exitUsage, `headgate limit: limit "-5" is not a count of jobs (0 or more) or off`},
			{[]string{"rate", "smtp", "-1", "1s", "5"}, exitUsage, `headgate rate: LIMIT "-1" is not a count of tokens (0 or more)`},
			{[]string{"rate", "smtp", "1", "-1s", "5"}, exitUsage, `headgate rate: WINDOW "-1s" is not a positive duration such as 1s or 1m`},
			{[]string{"rate", "smtp", "1", "1s", "-5"}, exitUsage, `headgate rate: BURST "-5" is not a positive count of tokens`},
			{[]string{"policy", "set", "crash_limit", "-1"}, exitUsage, `headgate policy: crash_limit: is -1, outside 1..2147483647`},
		} {
			code, out, errOut := b.run(t, tc.args...)
			if code != tc.code || out != "" || !strings.HasPrefix(errOut, tc.want) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
			}
		}
		if after := b.dump(t); after != before {
			t.Errorf("a refused negative value changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		// A negative value of a flag is its value: -priority -5 sets it.
		requireContains(t, b.mustRun(t, "edit", "j", "-priority", "-5"), "edited j: available")
		var job jobDetailJSON
		b.runJSON(t, exitOK, &job, "job", "j")
		if job.Job.Priority != -5 {
			t.Errorf("after edit -priority -5: priority %d", job.Job.Priority)
		}
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "staged", Queue: "q", Pending: true}, headgate.Envelope{ID: "ready", Queue: "q"})
	code, out, errOut := b.run(t, "release", "staged", "other", "ready")
	if code != exitError || out != "released 1 job(s)\n" || !strings.Contains(errOut, "left unchanged: other (no such job), ready (available)") {
		t.Errorf("release: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	requireContains(t, b.mustRun(t, "job", "staged"), "State:        available")
}

func TestRate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireOutput(t, b.mustRun(t, "rate", "smtp", "10", "1s", "20"), "rate class smtp: 10 per 1s, burst 20\n")
	requireOutput(t, b.mustRun(t, "rate", "smtp", "off"), "rate class smtp is unlimited\n")
	requireOutput(t, b.mustRun(t, "rate", "smtp"), "rate class smtp is unlimited\n0 job(s) set aside now, 0 in all\n")
	for _, args := range [][]string{
		{"rate", "smtp", "off", "-json"},
		{"rate", "smtp", "x", "1s", "1"},
		{"rate", "smtp", "1", "soon", "1"},
		{"rate", "smtp", "1", "1s", "0"},
	} {
		if code, _, _ := b.run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireOutput(t, b.mustRun(t, "quarantine"), "no quarantined fingerprints\n")
	b.quarantinedIn(t, "q", "import:7", headgate.Envelope{ID: "sibling", Queue: "q", Fingerprint: "import:7"})
	b.admit(t, "q", 1, 0, time.Second) // the sibling is held
	requireOutput(t, b.mustRun(t, "quarantine"), `
FINGERPRINT  JOB      HELD
import:7     crasher  1
`)
	// The held sibling has a column of its own, so the unfinished total adds up.
	requireOutput(t, b.mustRun(t, "stats"), `
QUEUE  STATUS  LIMIT  UNFINISHED  PENDING  SCHEDULED  AVAILABLE  HELD  RUNNING  RETRYABLE  COMPLETED  ARCHIVED  CANCELLED  UNDECODABLE  QUARANTINED  COMPLETED/1H  FAILED/1H
q      active  -      1           0        0          0          1     0        0          0          0         0          0            1            -             -

no throughput sampled in the last hour: a worker's series duty samples it once a minute

1 quarantined fingerprint(s): see headgate quarantine

no live worker serves 1 queue(s) with work: q (see headgate workers)
`)
	requireContains(t, b.mustRun(t, "job", "sibling"), "available (held: its fingerprint is quarantined)")
	requireOutput(t, b.mustRun(t, "quarantine", "release", "import:7"),
		"released fingerprint import:7: 1 held job(s) returned to admission\n")
	requireOutput(t, b.mustRun(t, "quarantine"), "no quarantined fingerprints\n")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"NoCommand", nil, exitUsage, "usage: headgate"},
		{"Help", []string{"help"}, exitOK, "quarantine [release FINGERPRINT [-retry]]"},
		{"HelpFlag", []string{"-h"}, exitOK, "global flags"},
		{"Unknown", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"NoNamespace", []string{"-namespace", "", "stats"}, exitUsage, "no namespace"},
		{"BadFlag", []string{"-namespace", "n", "jobs", "-color"}, exitUsage, "flag provided but not defined"},
		{"CommandHelp", []string{"jobs", "-h"}, exitOK, "usage: headgate jobs"},
		{"ExtraArgs", []string{"-namespace", "n", "-redis", "127.0.0.1:1", "pause", "a", "b"}, exitUsage, "want 1 argument(s), got 2"},
		{"BadURL", []string{"-namespace", "n", "-redis", "http://x", "stats"}, exitUsage, "bad -redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tc.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr does not contain %q:\n%s", tc.want, errOut.String())
			}
		})
	}
}

func TestConnectionError(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	addr := mr.Addr()
	mr.Close() // nothing listens there now
	var out, errOut bytes.Buffer
	if code := run([]string{"-redis", addr, "-namespace", "n", "stats"}, &out, &errOut); code != exitError {
		t.Errorf("stats against a closed server: exit %d, want %d", code, exitError)
	}
	// Refused at once: the dial's error and the address, not a timeout.
	want := "headgate: cannot connect to Redis at " + addr + ": dial tcp " + addr + ": connect: connection refused\n"
	if got := errOut.String(); got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

// A server that wants a password, or gets a wrong one, is told apart, with where the
// password goes; and no message repeats a password the -redis URL holds.
func TestCredentialsErrors(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	mr.RequireAuth("hunter2")
	for _, tc := range []struct {
		name, url string
		code      int
		want      []string
	}{
		{"no password", mr.Addr(), exitError, []string{"NOAUTH", "Redis wants a password: give it in the URL, -redis redis://:PASSWORD@HOST:PORT"}},
		{"wrong password", "redis://:hunter3@" + mr.Addr(), exitError, []string{"WRONGPASS", "password in the -redis URL or $REDIS_URL is wrong"}},
		{"bad URL", "redis://:hunter2@127.0.0.1:notaport", exitUsage, []string{`bad -redis "redis://:xxxxx@127.0.0.1:notaport"`}},
		{"bad database", "redis://ops:hunter2@" + mr.Addr() + "/x", exitUsage, []string{`bad -redis "redis://ops:xxxxx@` + mr.Addr() + `/x"`}},
		{"right password", "redis://:hunter2@" + mr.Addr(), exitOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run([]string{"-redis", tc.url, "-namespace", "n", "stats"}, &out, &errOut); code != tc.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tc.code, errOut.String())
			}
			requireContains(t, errOut.String(), tc.want...)
			if strings.Contains(errOut.String(), "hunter") {
				t.Errorf("stderr shows the password:\n%s", errOut.String())
			}
		})
	}
}

// A write refused by a replica or by a server out of memory says what to do.
func TestServerRefusalsSayWhatToDo(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.StartWith(t, "--replicaof", host, port)
	var out, errOut bytes.Buffer
	if code := run([]string{"-redis", replica.Addr(), "-namespace", "n", "pause", "q", "-create"}, &out, &errOut); code != exitError {
		t.Errorf("pause on a replica: exit %d, want %d", code, exitError)
	}
	requireContains(t, errOut.String(), "READONLY", "(-redis names a replica: point it at the master)")

	c := &cli{addr: "redis.example:6379", timeout: 3 * time.Second}
	oom := fmt.Errorf("%w: pause refused: OOM command not allowed", headgate.ErrOutOfMemory)
	requireContains(t, c.errorLine(oom), "out of memory", "(raise the server's maxmemory, or free memory on it")
}

// A connection that could not be made (refused, no route, a name that does not resolve)
// is reported with the dial's error and the address; a call that ran out of time says
// -timeout; a connection dropped says so.
func TestConnectionErrorsToldApart(t *testing.T) {
	t.Parallel()
	c := &cli{addr: "redis.example:6379", timeout: 3 * time.Second}
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dial(&net.DNSError{Err: "no such host", Name: "redis.example", IsNotFound: true}),
			"headgate: cannot connect to Redis at redis.example:6379: dial tcp: lookup redis.example: no such host"},
		{dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)),
			"headgate: cannot connect to Redis at redis.example:6379: dial tcp: connect: no route to host"},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)),
			"headgate: cannot connect to Redis at redis.example:6379: dial tcp: connect: connection refused"},
		{dial(&net.DNSError{Err: "i/o timeout", Name: "redis.example", IsTimeout: true}),
			"headgate: Redis at redis.example:6379 did not answer (-timeout 3s): dial tcp: lookup redis.example: i/o timeout"},
		{fmt.Errorf("stats: %w", context.DeadlineExceeded),
			"headgate: Redis at redis.example:6379 did not answer (-timeout 3s): stats: context deadline exceeded"},
		{io.EOF, "headgate: Redis at redis.example:6379 dropped the connection: EOF"},
		{errors.New("ERR unknown command"), "headgate: ERR unknown command"},
	} {
		if got := c.errorLine(tc.err); got != tc.want {
			t.Errorf("errorLine(%v) =\n%q\nwant\n%q", tc.err, got, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	mp, err := msgpack.Marshal([]any{1, "a", map[string]any{"k": true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		b       []byte
		payload bool
		want    string
	}{
		{"Empty", nil, true, "(empty)"},
		{"MsgpackPayload", mp, true, `[1,"a",{"k":true}]`},
		{"TextResult", []byte("hello"), false, `"hello"`},
		{"TextPayload", []byte("hello"), true, `"hello"`}, // 'h' decodes as a number but leaves bytes over
		{"Binary", []byte{0xc1, 0xff}, false, "2 bytes: c1ff"},
	} {
		if got := formatBytes(tc.b, tc.payload); got != tc.want {
			t.Errorf("%s: formatBytes = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	var c cli
	for _, tc := range []struct {
		args []string
		pos  string
		ns   string
	}{
		{[]string{"a", "-namespace", "x", "b"}, "a b", "x"},
		{[]string{"-namespace", "y", "a"}, "a", "y"},
		{[]string{"a", "--", "-namespace", "z"}, "a -namespace z", ""},
		// A negative number is an argument, not a flag; a flag's value is its value.
		{[]string{"q", "-5"}, "q -5", ""},
		{[]string{"-5", "-namespace", "x", "-1s", "-.5"}, "-5 -1s -.5", "x"},
		{[]string{"-namespace", "-5", "q"}, "q", "-5"},
		{[]string{"-namespace=x", "q", "-7", "--", "-9", "-namespace"}, "q -7 -9 -namespace", "x"},
	} {
		c.namespace = ""
		fs := newTestFlagSet(&c)
		pos, err := parseInterleaved(fs, tc.args)
		if err != nil || strings.Join(pos, " ") != tc.pos || c.namespace != tc.ns {
			t.Errorf("parseInterleaved(%q) = %q, %v (namespace %q); want %q (namespace %q)", tc.args, pos, err, c.namespace, tc.pos, tc.ns)
		}
	}
}

// An error is printed once, on one line, prefixed once.
func TestErrorPrintedOnce(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run([]string{"-redis", "127.0.0.1:1", "-namespace", "a{b", "stats"}, &out, &errOut)
	got := errOut.String()
	if code != exitUsage || strings.Count(got, "\n") != 1 || strings.Count(got, "headgate:") != 1 ||
		!strings.HasPrefix(got, "headgate: invalid Namespace") {
		t.Errorf("bad namespace: exit %d, stderr %q; want one line \"headgate: invalid Namespace...\"", code, got)
	}
}

// silentRedis listens on a loopback port, accepts connections and never answers, until
// the test ends.
func silentRedis(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	return l
}

// A Redis that accepts connections but never answers: the command gives up after
// -timeout and names the address.
func TestTimeoutNamesAddress(t *testing.T) {
	t.Parallel()
	l := silentRedis(t)
	var out, errOut bytes.Buffer
	t0 := time.Now()
	code := run([]string{"-redis", l.Addr().String(), "-namespace", "n", "-timeout", "200ms", "stats"}, &out, &errOut)
	got := errOut.String()
	if code != exitError || !strings.Contains(got, "Redis at "+l.Addr().String()+" did not answer (-timeout 200ms)") ||
		strings.Count(got, "\n") != 1 {
		t.Errorf("silent server: exit %d, stderr %q; want one line naming %s", code, got, l.Addr())
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("the command took %s to give up, want about -timeout", took)
	}
}

// Messages repeat at most 200 bytes of an id the user passed.
func TestLongIDsShortenedInMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("y", 250) // a valid id (up to 256 bytes), long enough to cut
	code, _, errOut := b.run(t, "cancel", long)
	if code != exitError || strings.Contains(errOut, long) || !strings.Contains(errOut, "(250 bytes)") {
		t.Errorf("cancel of a 250-byte id: exit %d, stderr %q; want the id cut to 200 bytes", code, errOut)
	}
	code, _, errOut = b.run(t, "job", long)
	if code != exitError || strings.Contains(errOut, long) || !strings.Contains(errOut, "(250 bytes)") {
		t.Errorf("job with a 250-byte id: exit %d, stderr %q; want the id cut to 200 bytes", code, errOut)
	}
	code, _, errOut = b.run(t, "release", long)
	if code != exitError || strings.Contains(errOut, long) || !strings.Contains(errOut, "(250 bytes)") {
		t.Errorf("release of a 250-byte id: exit %d, stderr %q; want the id cut to 200 bytes", code, errOut)
	}
}

// TestLongDurationsReadable: a long duration reads in days and hours, not thousands of
// hours with seconds (27041h28m57s), in every line of job that prints one.
func TestLongDurationsReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "far", Kind: "email", ScheduledAt: epoch.Add(27041*time.Hour + 28*time.Minute + 57*time.Second),
		Retention: 30 * 24 * time.Hour, UniqueKey: "u", UniqueWindow: 90 * time.Minute})
	out := b.mustRun(t, "job", "far")
	requireContains(t, out, "(in 1126d17h)", "Retention:    30d\n", "(throttle window 1h30m)")
	if strings.Contains(out, "27041h") {
		t.Errorf("job prints hours past 48 as hours:\n%s", out)
	}
}

// TestPrintedCommandLinesNameTheNamespace: the command line printed for the next page of
// a listing or to resume a run by filter names the namespace the command ran in, so that
// run as printed it goes on in that namespace, not in $HEADGATE_NAMESPACE's (where its
// cursor, a position among another namespace's jobs, would skip jobs) or in none.
func TestPrintedCommandLinesNameTheNamespace(t *testing.T) {
	t.Setenv("HEADGATE_NAMESPACE", "another")
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j1", Kind: "email", Queue: "mail"}, headgate.Envelope{ID: "j2", Kind: "email", Queue: "mail"})
	out := b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-limit", "1")
	_, line, ok := strings.Cut(out, "\nmore: ")
	if !ok || !strings.HasPrefix(line, "headgate -namespace cli-test jobs ") {
		t.Fatalf("jobs printed no next page in namespace cli-test:\n%s", out)
	}
	args := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(line, "headgate "), `"`, ""))
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"-redis", b.url}, args...), &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "\nj1 ") {
		t.Errorf("the printed line %q: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, stdout.String(), stderr.String())
	}
}

// Duration flags of the operator's commands take a duration as the command prints it
// (a tenant's OLDEST 2d2h, a policy's 7d) as well as Go's notation.
func TestDurationFlagsTakePrintedForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "old", Kind: "email", Queue: "mail"})
	if err := b.store.AdvanceClock(b.ctx, 3*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	requireContains(t, b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-older-than", "2d"), "\nold ")
	requireContains(t, b.mustRun(t, "jobs", "-queue", "mail", "-state", "available", "-older-than", "3d1h"), "no matching jobs")
	if code, _, errOut := b.run(t, "jobs", "-queue", "mail", "-state", "available", "-older-than", "2 days"); code != exitUsage ||
		!strings.Contains(errOut, "-older-than") {
		t.Errorf("-older-than '2 days': exit %d, stderr %q", code, errOut)
	}
	// -at of edit and retry by ids: a duration from the store's now, in either form.
	var edited struct {
		ID          string  `json:"id"`
		State       string  `json:"state"`
		ScheduledAt *string `json:"scheduled_at"`
	}
	b.runJSON(t, exitOK, &edited, "edit", "old", "-at", "2d")
	if edited.ScheduledAt == nil || *edited.ScheduledAt != "2030-01-07T03:04:05.000Z" {
		t.Errorf("edit -at 2d: scheduled at %v, want 2030-01-07T03:04:05.000Z (3 days after epoch, and 2 more)", edited.ScheduledAt)
	}
	b.mustRun(t, "cron", "add", "weekly", "-cron", "@daily", "-kind", "report", "-retention", "7d")
	sc, err := b.store.GetSchedule(b.ctx, "weekly")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Job.Retention != 7*24*time.Hour {
		t.Errorf("cron add -retention 7d: retention %s", sc.Job.Retention)
	}
}

// Available jobs heavier than their rate class's burst never run at its limit: stats
// says so under its table, where they are counted available.
func TestStatsNamesUnrunnableJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.store.SetRateLimit(b.ctx, "pdf", headgate.RateLimit{Limit: 1, Window: time.Minute, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "heavy", Kind: "pdf", Queue: "docs", RateClass: "pdf", Weight: 2})
	b.admit(t, "docs", 1, 0, time.Minute) // sets it aside: heavier than the class's burst
	requireContains(t, b.mustRun(t, "stats"), "\n1 available job(s) are heavier than their rate class's burst and cannot run at its limit: docs "+
		"(headgate why ID names the class; headgate rate CLASS LIMIT WINDOW BURST raises it)\n")
}

// An id given twice to release is one job released, not two.
func TestReleaseCountsJobsNotArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "staged", Queue: "mail", Pending: true})
	requireOutput(t, b.mustRun(t, "release", "staged", "staged"), "released 1 job(s)\n")
}

package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type testBundle struct {
	ctx   context.Context
	insp  *inspector.Inspector
	store *headgate.Store // the same namespace, to set up jobs
}

// setup returns an inspector of a fresh namespace on the shared miniredis, with the
// store clock frozen at epoch and a crash limit of 1 so one lost lease quarantines.
func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupOn(t, redistest.Miniredis(t))
}

// setupOn is setup on rdb, for the tests that run on every backend.
func setupOn(t *testing.T, rdb redis.UniversalClient) *testBundle {
	t.Helper()
	ns := redistest.Namespace(t)
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: ns})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns, CrashLimit: 1})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	ctx := context.Background()
	if err := store.FreezeClock(ctx, epoch); err != nil {
		t.Fatalf("FreezeClock: %v", err)
	}
	return &testBundle{ctx: ctx, insp: insp, store: store}
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

func (b *testBundle) admit(t *testing.T, queue string, capacity int) []headgate.Claim {
	t.Helper()
	claims, err := b.store.Admit(b.ctx, headgate.AdmitRequest{Worker: "w", LeaseID: fmt.Sprintf("lease-%d", time.Now().UnixNano()),
		Queues: []string{queue}, Capacity: capacity, Lease: time.Minute})
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return claims
}

func (b *testBundle) stats(t *testing.T, queue string) inspector.QueueStats {
	t.Helper()
	stats, err := b.insp.Stats(b.ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for _, s := range stats {
		if s.Queue == queue {
			return s
		}
	}
	t.Fatalf("Stats has no queue %q: %+v", queue, stats)
	return inspector.QueueStats{}
}

func TestNew(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	var inv *headgate.InvalidError
	if _, err := inspector.New(rdb, &inspector.Config{Namespace: ""}); !errors.As(err, &inv) || inv.Field != "Namespace" {
		t.Errorf("New without a namespace: err = %v, want *InvalidError for Namespace", err)
	}
	if _, err := inspector.New(nil, &inspector.Config{Namespace: "n"}); !errors.As(err, &inv) || inv.Field != "rdb" {
		t.Errorf("New(nil): err = %v, want *InvalidError for rdb", err)
	}
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: "n"})
	if err != nil || insp.Namespace() != "n" {
		t.Errorf("New = %v, %v", insp, err)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t,
		headgate.Envelope{ID: "a1", Queue: "a"},
		headgate.Envelope{ID: "a2", Queue: "a"},
		headgate.Envelope{ID: "a3", Queue: "a", ScheduledAt: epoch.Add(time.Hour)},
		headgate.Envelope{ID: "b1", Queue: "b", Retention: time.Hour},
	)
	claims := b.admit(t, "b", 1)
	if _, err := b.store.Ack(b.ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.insp.Pause(b.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.insp.SetEnqueueLimit(b.ctx, "c", 10); err != nil {
		t.Fatal(err)
	}

	stats, err := b.insp.Stats(b.ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	var names []string
	for _, s := range stats {
		names = append(names, s.Queue)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("Stats queues = %v, want [a b c] (a limit alone lists a queue)", names)
	}
	a, bq, c := stats[0], stats[1], stats[2]
	if a.Counts[headgate.StateAvailable] != 2 || a.Counts[headgate.StateScheduled] != 1 || a.Unfinished != 3 || !a.Paused || a.Limit != nil {
		t.Errorf("stats of a = %+v", a)
	}
	if bq.Counts[headgate.StateCompleted] != 1 || bq.Unfinished != 0 || bq.Paused {
		t.Errorf("stats of b = %+v", bq)
	}
	if c.Limit == nil || *c.Limit != 10 || c.Unfinished != 0 {
		t.Errorf("stats of c = %+v, want limit 10", c)
	}

	if err := b.insp.Resume(b.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.insp.RemoveEnqueueLimit(b.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if s := b.stats(t, "a"); s.Paused {
		t.Errorf("a is still paused after Resume")
	}
	if stats, err = b.insp.Stats(b.ctx); err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 {
		t.Errorf("Stats after removing c's limit = %+v, want only a and b", stats)
	}
}

func TestPauseStopsAdmission(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q"})
	if err := b.insp.Pause(b.ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := b.admit(t, "q", 1); len(got) != 0 {
		t.Fatalf("admitted %d jobs from a paused queue", len(got))
	}
	if err := b.insp.Resume(b.ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := b.admit(t, "q", 1); len(got) != 1 {
		t.Fatalf("admitted %d jobs after Resume, want 1", len(got))
	}
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var jobs []headgate.Envelope
	for i := range 25 {
		kind := "k-even"
		if i%2 == 1 {
			kind = "k-odd"
		}
		jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("job-%02d", i), Queue: "q", Kind: kind})
	}
	b.enqueue(t, jobs...)
	if err := b.insp.Cancel(b.ctx, "job-03"); err != nil {
		t.Fatal(err)
	}

	// Page through the available jobs, four at a time, oldest first: enqueued together,
	// they entered the state at the same time, so they come by id.
	var ids []string
	f := inspector.JobFilter{Queue: "q", State: headgate.StateAvailable}
	p := inspector.Page{Limit: 4, Oldest: true}
	for pages := 0; ; pages++ {
		if pages > 7 {
			t.Fatal("more pages than 24 jobs fill")
		}
		page, err := b.insp.ListJobs(b.ctx, f, p)
		if err != nil {
			t.Fatalf("ListJobs: %v", err)
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
	}
	var want []string
	for i := range 25 {
		if i != 3 {
			want = append(want, fmt.Sprintf("job-%02d", i))
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("paged ids = %v, want %v", ids, want)
	}

	for _, tc := range []struct {
		name string
		f    inspector.JobFilter
		want []string
	}{
		{"Kind", inspector.JobFilter{Queue: "q", State: headgate.StateAvailable, Kind: "k-odd"}, []string{"job-23", "job-21",
			"job-19", "job-17", "job-15", "job-13", "job-11", "job-09", "job-07", "job-05", "job-01"}},
		{"OtherQueue", inspector.JobFilter{Queue: "other", State: headgate.StateAvailable}, nil},
		{"State", inspector.JobFilter{Queue: "q", State: headgate.StateCancelled}, []string{"job-03"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := b.insp.ListJobs(b.ctx, tc.f, inspector.Page{})
			if err != nil {
				t.Fatalf("ListJobs: %v", err)
			}
			var got []string
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			if !slices.Equal(got, tc.want) || page.Next != "" {
				t.Errorf("ListJobs(%+v) = %v next %q, want %v and no next page", tc.f, got, page.Next, tc.want)
			}
		})
	}

	var inv *headgate.InvalidError
	if _, err := b.insp.ListJobs(b.ctx, inspector.JobFilter{Queue: "q", State: "bogus"}, inspector.Page{}); !errors.As(err, &inv) || inv.Field != "State" {
		t.Errorf("ListJobs with an unknown state: err = %v, want *InvalidError for State", err)
	} else if !strings.Contains(err.Error(), "quarantined") {
		t.Errorf("error %q does not list the states", err)
	}
	if _, err := b.insp.ListJobs(b.ctx, inspector.JobFilter{State: headgate.StateAvailable}, inspector.Page{}); !errors.As(err, &inv) || inv.Field != "Queue" {
		t.Errorf("ListJobs without a queue: err = %v, want *InvalidError for Queue", err)
	}
	if _, err := b.insp.ListJobs(b.ctx, f, inspector.Page{Limit: 5000}); !errors.As(err, &inv) || inv.Field != "Limit" {
		t.Errorf("ListJobs with limit 5000: err = %v, want *InvalidError for Limit", err)
	}
	if _, err := b.insp.ListJobs(b.ctx, f, inspector.Page{Cursor: "nope"}); !errors.As(err, &inv) || inv.Field != "Cursor" {
		t.Errorf("ListJobs with a bad cursor: err = %v, want *InvalidError for Cursor", err)
	}
}

func TestJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "j", Queue: "q", Retention: time.Hour, Tags: []string{"x"}})

	// First attempt: output, progress, then a failure with logs.
	c := b.admit(t, "q", 1)[0]
	if _, err := b.store.WriteOutput(b.ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("partial")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.WriteProgress(b.ctx, c.LeaseRef(), headgate.Progress{Current: 3, Total: 10, Message: "copying"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Ack(b.ctx, c.LeaseRef(), headgate.OutcomeRetry,
		&headgate.AckOpts{Error: "timeout", Delay: time.Second, Logs: []string{"dialing"}}); err != nil {
		t.Fatal(err)
	}
	d, err := b.insp.Job(b.ctx, "j")
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if d.Job.State != headgate.StateRetryable || d.Job.Attempt != 1 || !slices.Equal(d.Job.Tags, []string{"x"}) {
		t.Errorf("job = %+v, want retryable after attempt 1", d.Job)
	}
	if len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Message, "timeout") || !slices.ContainsFunc(d.Errors[0].Logs, func(l string) bool { return strings.Contains(l, "dialing") }) {
		t.Errorf("Errors = %q, want the failure and its logs", d.Errors)
	}
	if d.Output == nil || string(d.Output.Bytes) != "partial" || d.Output.Fence != c.Fence || !d.Output.UpdatedAt.Equal(epoch) {
		t.Errorf("Output = %+v", d.Output)
	}
	if d.Progress == nil || d.Progress.Current != 3 || d.Progress.Total != 10 || d.Progress.Message != "copying" {
		t.Errorf("Progress = %+v", d.Progress)
	}
	if d.Result != nil {
		t.Errorf("Result = %+v before success, want nil", d.Result)
	}

	// Second attempt succeeds with a result.
	if err := b.store.AdvanceClock(b.ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.store.PromoteDue(b.ctx, 10); err != nil {
		t.Fatal(err)
	}
	c = b.admit(t, "q", 1)[0]
	if _, err := b.store.Ack(b.ctx, c.LeaseRef(), headgate.OutcomeSuccess,
		&headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 2, Bytes: []byte("done")}}); err != nil {
		t.Fatal(err)
	}
	d, err = b.insp.Job(b.ctx, "j")
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if d.Job.State != headgate.StateCompleted || d.Result == nil || string(d.Result.Bytes) != "done" || d.Result.SchemaVersion != 2 {
		t.Errorf("after success: state %s, result %+v", d.Job.State, d.Result)
	}

	if _, err := b.insp.Job(b.ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("Job(missing): err = %v, want ErrJobNotFound", err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "waiting", Queue: "q"}, headgate.Envelope{ID: "running", Queue: "q"})
	c := b.admit(t, "q", 1)[0] // "running" sorts first
	if c.Envelope.ID != "running" {
		t.Fatalf("admitted %q, want running", c.Envelope.ID)
	}
	for _, id := range []string{"waiting", "running"} {
		if err := b.insp.Cancel(b.ctx, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
	var rejected *headgate.LeaseRejectedError
	if _, err := b.store.Ack(b.ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); !errors.As(err, &rejected) {
		t.Errorf("holder's ack after Cancel: err = %v, want *LeaseRejectedError", err)
	}
	if s := b.stats(t, "q"); s.Counts[headgate.StateCancelled] != 2 || s.Unfinished != 0 {
		t.Errorf("stats = %+v, want 2 cancelled", s)
	}
	var nc *headgate.NotCancellableError
	if err := b.insp.Cancel(b.ctx, "waiting"); !errors.As(err, &nc) || nc.State != headgate.StateCancelled {
		t.Errorf("second Cancel: err = %v, want *NotCancellableError", err)
	}
	if err := b.insp.Cancel(b.ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("Cancel(missing): err = %v, want ErrJobNotFound", err)
	}
}

func TestEnqueueLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.insp.SetEnqueueLimit(b.ctx, "q", 1); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q"})
	var bp *headgate.BackpressureError
	if _, err := b.store.Enqueue(b.ctx, headgate.Envelope{ID: "j2", Kind: "test", Queue: "q"}); !errors.As(err, &bp) {
		t.Fatalf("Enqueue past the limit: err = %v, want *BackpressureError", err)
	}
	if err := b.insp.RemoveEnqueueLimit(b.ctx, "q"); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, headgate.Envelope{ID: "j2", Queue: "q"})

	var inv *headgate.InvalidError
	if err := b.insp.SetEnqueueLimit(b.ctx, "q", -1); !errors.As(err, &inv) {
		t.Errorf("SetEnqueueLimit(-1): err = %v, want *InvalidError", err)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.insp.SetRateLimit(b.ctx, "smtp", inspector.RateLimit{Limit: 1, Window: time.Hour, Burst: 1}); err != nil {
		t.Fatalf("SetRateLimit: %v", err)
	}
	b.enqueue(t, headgate.Envelope{ID: "j1", Queue: "q", RateClass: "smtp"}, headgate.Envelope{ID: "j2", Queue: "q", RateClass: "smtp"})
	if got := b.admit(t, "q", 2); len(got) != 1 {
		t.Fatalf("admitted %d jobs with one token, want 1", len(got))
	}
	if err := b.insp.RemoveRateLimit(b.ctx, "smtp"); err != nil {
		t.Fatalf("RemoveRateLimit: %v", err)
	}
	if got := b.admit(t, "q", 2); len(got) != 1 {
		t.Fatalf("admitted %d jobs after removing the limit, want the other one", len(got))
	}
	var inv *headgate.InvalidError
	if err := b.insp.SetRateLimit(b.ctx, "smtp", inspector.RateLimit{Limit: 1, Window: time.Hour}); !errors.As(err, &inv) || inv.Field != "Burst" {
		t.Errorf("SetRateLimit without a burst: err = %v, want *InvalidError for Burst", err)
	}
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t,
		headgate.Envelope{ID: "crasher", Queue: "q", Fingerprint: "import:42", Priority: 10},
		headgate.Envelope{ID: "sibling", Queue: "q", Fingerprint: "import:42"},
	)
	claims := b.admit(t, "q", 1)
	if len(claims) != 1 || claims[0].Envelope.ID != "crasher" {
		t.Fatalf("admitted %+v, want crasher", claims)
	}
	// The worker dies: its lease expires and the crash limit (1) quarantines the job.
	if err := b.store.AdvanceClock(b.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, err := b.store.ReclaimExpired(b.ctx, 10); err != nil || len(r) != 1 || !r[0].Quarantined {
		t.Fatalf("ReclaimExpired = %+v, %v; want crasher quarantined", r, err)
	}
	// Admission sets the sibling aside.
	if got := b.admit(t, "q", 1); len(got) != 0 {
		t.Fatalf("admitted %+v while its fingerprint is quarantined", got)
	}
	q, err := b.insp.Quarantined(b.ctx)
	if err != nil {
		t.Fatalf("Quarantined: %v", err)
	}
	want := []inspector.QuarantinedFingerprint{{Fingerprint: "import:42", JobID: "crasher", Held: 1}}
	if !slices.Equal(q, want) {
		t.Errorf("Quarantined = %+v, want %+v", q, want)
	}
	var qe *headgate.QuarantinedError
	if _, err := b.store.Enqueue(b.ctx, headgate.Envelope{ID: "new", Kind: "test", Queue: "q", Fingerprint: "import:42"}); !errors.As(err, &qe) {
		t.Errorf("Enqueue with a quarantined fingerprint: err = %v, want *QuarantinedError", err)
	}

	n, err := b.insp.ReleaseQuarantine(b.ctx, "import:42")
	if err != nil || n != 1 {
		t.Fatalf("ReleaseQuarantine = %d, %v; want 1 sibling released", n, err)
	}
	if q, err := b.insp.Quarantined(b.ctx); err != nil || len(q) != 0 {
		t.Errorf("Quarantined after release = %+v, want none (err %v)", q, err)
	}
	if got := b.admit(t, "q", 1); len(got) != 1 || got[0].Envelope.ID != "sibling" {
		t.Errorf("admitted %+v after release, want sibling", got)
	}
	d, err := b.insp.Job(b.ctx, "crasher")
	if err != nil || d.Job.State != headgate.StateQuarantined {
		t.Errorf("crasher after release = %+v, %v; want it still quarantined for inspection", d, err)
	}
}

func TestReleasePending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, headgate.Envelope{ID: "staged", Queue: "q", Pending: true})
	left, err := b.insp.ReleasePending(b.ctx, "staged", "other")
	if err != nil || !slices.Equal(left, []string{"other"}) {
		t.Fatalf("ReleasePending = %v, %v; want [other] left", left, err)
	}
	d, err := b.insp.Job(b.ctx, "staged")
	if err != nil {
		t.Fatal(err)
	}
	if d.Job.State != headgate.StateAvailable {
		t.Errorf("released job is %s, want available", d.Job.State)
	}
}

func TestUnknownQueue(t *testing.T) {
	stats := []inspector.QueueStats{{Queue: "default"}, {Queue: "mail"}}
	for _, c := range []struct {
		stats   []inspector.QueueStats
		queue   string
		unknown bool
		queues  string
	}{
		{stats, "mail", false, ""},
		{stats, "mial", true, "its queues: default, mail"},
		{nil, "default", true, "it has no queue"},
	} {
		if unknown, queues := inspector.UnknownQueue(c.stats, c.queue); unknown != c.unknown || queues != c.queues {
			t.Errorf("UnknownQueue(%v, %q) = %t, %q; want %t, %q", c.stats, c.queue, unknown, queues, c.unknown, c.queues)
		}
	}
}

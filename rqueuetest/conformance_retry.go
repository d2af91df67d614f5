package rqueuetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// quarantinedWithHeldSibling enqueues job id and, due an hour later, job sibling, both
// with the fingerprint "poison"; id's crashes quarantine it, and an hour on the sibling
// is promoted into the held set.
func quarantinedWithHeldSibling(t testing.TB, ctx context.Context, s *headgate.Store, id, sibling string) {
	t.Helper()
	poison, sib := job(id), job(sibling)
	poison.Fingerprint, sib.Fingerprint = "poison", "poison"
	sib.ScheduledAt = epoch.Add(time.Hour)
	mustEnqueue(t, ctx, s, poison, sib)
	quarantineJob(t, ctx, s, id)
	advance(t, ctx, s, time.Hour)
	mustPromote(t, ctx, s)
}

// quarantineJob crashes job id (enqueued with a fingerprint, and first in line) into
// the store's crash limit (the default, 3): it ends quarantined.
func quarantineJob(t testing.TB, ctx context.Context, s *headgate.Store, id string) {
	t.Helper()
	for crash := 1; crash <= headgate.CrashLimitDefault; crash++ {
		if c := admitOne(t, ctx, s); c.Envelope.ID != id {
			t.Fatalf("admitted %s, want %s", c.Envelope.ID, id)
		}
		advance(t, ctx, s, time.Minute)
		if _, err := s.ReclaimExpired(ctx, 10); err != nil {
			t.Fatalf("reclaim: %v", err)
		}
		if crash < headgate.CrashLimitDefault {
			// Past the jittered crash backoff, well before the siblings' time (an hour).
			advance(t, ctx, s, 10*time.Minute)
			mustPromote(t, ctx, s)
		}
	}
	wantState(t, ctx, s, id, headgate.StateQuarantined)
}

// finishAs admits the next job, which must be id, and acks it with o.
func finishAs(t testing.TB, ctx context.Context, s *headgate.Store, id string, o headgate.Outcome) {
	t.Helper()
	c := admitOne(t, ctx, s)
	if c.Envelope.ID != id {
		t.Fatalf("admitted %s, want %s", c.Envelope.ID, id)
	}
	mustAck(t, ctx, s, c, o, nil)
}

func mustRetry(t testing.TB, ctx context.Context, s *headgate.Store, id string, opts *headgate.RetryOptions) headgate.RetryResult {
	t.Helper()
	r, err := s.Retry(ctx, id, opts)
	if err != nil {
		t.Fatalf("retry %s: %v", id, err)
	}
	return r
}

// retryCases cover the operator's Retry of a finished job.
var retryCases = []conformanceCase{
	{"Retry/EachFinishedState", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		failing := job("b-archived")
		failing.MaxAttempts = 1
		mustEnqueue(t, ctx, s, job("a-completed"), failing, job("c-undecodable"), job("d-cancelled"))
		finishAs(t, ctx, s, "a-completed", headgate.OutcomeSuccess)
		finishAs(t, ctx, s, "b-archived", headgate.OutcomeRetry)
		finishAs(t, ctx, s, "c-undecodable", headgate.OutcomeUndecodable)
		mustCancel(t, ctx, s, "d-cancelled")
		wantState(t, ctx, s, "b-archived", headgate.StateArchived)
		if a := getJob(t, ctx, s, "b-archived"); a.Attempt != 1 {
			t.Fatalf("archived job has attempt %d, want 1", a.Attempt)
		}
		for _, id := range []string{"a-completed", "b-archived", "c-undecodable", "d-cancelled"} {
			r := mustRetry(t, ctx, s, id, nil)
			if r.State != headgate.StateAvailable || !r.ScheduledAt.Equal(epoch) || r.Lifted {
				t.Errorf("retry %s: %+v, want available at %v", id, r, epoch)
			}
			j := getJob(t, ctx, s, id)
			if j.State != headgate.StateAvailable || j.Attempt != 0 || !j.FinalizedAt.IsZero() {
				t.Errorf("retried %s: %s, attempt %d, finalized %v", id, j.State, j.Attempt, j.FinalizedAt)
			}
		}
		// Out of the retained index: a lapse of the old retention evicts nothing.
		advance(t, ctx, s, 2*time.Hour)
		if n := mustEvict(t, ctx, s); n != 0 {
			t.Errorf("evicted %d retried jobs", n)
		}
		got := mustAdmit(t, ctx, s, admitReq("w", 10))
		if len(got) != 4 {
			t.Errorf("admitted %v after the retries, want the 4 jobs", ids(got))
		}
	}},
	// A retried completed job is no longer the run that stored its result: the result
	// goes, and the next success stores its own, or none.
	{"Retry/CompletedResultGoes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess,
			&headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: []byte("first run")}})
		mustRetry(t, ctx, s, "a", nil)
		if r, err := s.JobResult(ctx, "a"); err != nil || r != nil {
			t.Errorf("result of the retried job: %+v, %v; want none", r, err)
		}
		finishAs(t, ctx, s, "a", headgate.OutcomeSuccess)
		wantState(t, ctx, s, "a", headgate.StateCompleted)
		if r, err := s.JobResult(ctx, "a"); err != nil || r != nil {
			t.Errorf("result after a success that set none: %+v, %v; want none, not the first run's", r, err)
		}
	}},
	{"Retry/AtAndKeepAttempts", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		failing := job("a")
		failing.MaxAttempts = 1
		mustEnqueue(t, ctx, s, failing)
		finishAs(t, ctx, s, "a", headgate.OutcomeRetry)
		at := epoch.Add(time.Hour)
		r := mustRetry(t, ctx, s, "a", &headgate.RetryOptions{At: at, KeepAttempts: true})
		if r.State != headgate.StateScheduled || !r.ScheduledAt.Equal(at) {
			t.Errorf("retry at %v: %+v", at, r)
		}
		if j := getJob(t, ctx, s, "a"); j.Attempt != 1 || j.State != headgate.StateScheduled {
			t.Errorf("kept attempts: attempt %d, state %s", j.Attempt, j.State)
		}
		if n := mustPromote(t, ctx, s); n != 0 {
			t.Errorf("promoted %d jobs before their time", n)
		}
		advance(t, ctx, s, time.Hour)
		if n := mustPromote(t, ctx, s); n != 1 {
			t.Errorf("promoted %d jobs at their time, want 1", n)
		}
		// With its one attempt spent, the next failure archives it at once.
		finishAs(t, ctx, s, "a", headgate.OutcomeRetry)
		wantState(t, ctx, s, "a", headgate.StateArchived)
	}},
	{"Retry/WithEdit", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.PartitionKey, b.PartitionKey = "t1", "t1"
		mustEnqueue(t, ctx, s, a, b)
		mustCancel(t, ctx, s, "a")
		mustRetry(t, ctx, s, "a", &headgate.RetryOptions{Edit: &headgate.JobEdit{
			Payload: new([]byte(`{"n":2}`)), Priority: new(int32(9)), PartitionKey: new("t2")}})
		got := mustAdmit(t, ctx, s, admitReq("w", 2))
		i := slices.IndexFunc(got, func(c headgate.Claim) bool { return c.Envelope.ID == "a" })
		if i < 0 {
			t.Fatalf("admitted %v, want a among them", ids(got))
		}
		if e := got[i].Envelope; string(e.Payload) != `{"n":2}` || e.PartitionKey != "t2" || e.Priority != 9 {
			t.Errorf("admitted %+v, want a edited", e)
		}
	}},
	{"Retry/QuarantinedStaysHeldUnlessLifted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		quarantinedWithHeldSibling(t, ctx, s, "a", "sibling")
		mustRetry(t, ctx, s, "a", nil)
		if j := getJob(t, ctx, s, "a"); j.State != headgate.StateAvailable || !j.Held || j.CrashAttempt != 0 {
			t.Errorf("retried quarantined job: %s held %v crash %d, want available, held, crash 0", j.State, j.Held, j.CrashAttempt)
		}
		wantAdmitted(t, ctx, s, admitReq("w", 5), nil, " while the fingerprint is quarantined")
		if q, err := s.Quarantined(ctx); err != nil || len(q) != 1 {
			t.Errorf("quarantined %+v, %v: want the fingerprint still quarantined", q, err)
		}
	}},
	{"Retry/ReleaseQuarantineAndRetry", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		quarantinedWithHeldSibling(t, ctx, s, "a", "sibling")
		if j := getJob(t, ctx, s, "sibling"); !j.Held {
			t.Fatalf("sibling is not held: %+v", j)
		}
		r, err := s.ReleaseQuarantineAndRetry(ctx, "poison")
		if err != nil || r.State != headgate.StateAvailable || !r.Lifted || r.Released != 1 {
			t.Errorf("release and retry: %+v, %v; want available, lifted, 1 released", r, err)
		}
		if q, err := s.Quarantined(ctx); err != nil || len(q) != 0 {
			t.Errorf("quarantined %+v, %v after release", q, err)
		}
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 2 {
			t.Errorf("admitted %v, want a and its sibling", ids(got))
		}
		// Releasing a fingerprint that is not quarantined retries nothing.
		r, err = s.ReleaseQuarantineAndRetry(ctx, "poison")
		if err != nil || r.State != "" || r.Released != 0 {
			t.Errorf("second release: %+v, %v", r, err)
		}
	}},
	// The release and its retry are one step: a retry refused leaves the fingerprint
	// quarantined and its siblings held, as a refused Retry leaves its job.
	{"Retry/ReleaseQuarantineAndRetry/Refused/UniqueHolder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		poison, sib := job("a"), job("sibling")
		poison.Fingerprint, sib.Fingerprint, poison.UniqueKey = "poison", "poison", "u"
		sib.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, poison, sib)
		quarantineJob(t, ctx, s, "a")
		advance(t, ctx, s, time.Hour)
		mustPromote(t, ctx, s)
		holder := job("holder")
		holder.UniqueKey = "u"
		mustEnqueue(t, ctx, s, holder)
		err := unchanged(t, ctx, s, "release and retry with the key held", func() error {
			_, err := s.ReleaseQuarantineAndRetry(ctx, "poison")
			return err
		})
		if d := wantErr[*headgate.DuplicateError](t, err); d != nil && d.ExistingID != "holder" {
			t.Errorf("duplicate names %q, want holder", d.ExistingID)
		}
	}},
	{"Retry/ReleaseQuarantineAndRetry/Refused/Backpressure", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		quarantinedWithHeldSibling(t, ctx, s, "a", "sibling")
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 1); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "release and retry into a full queue", func() error {
			_, err := s.ReleaseQuarantineAndRetry(ctx, "poison")
			return err
		})
		if bp := wantErr[*headgate.BackpressureError](t, err); bp != nil && (bp.Limit != 1 || bp.Current != 1 || bp.Incoming != 1) {
			t.Errorf("backpressure %+v, want 1 unfinished (the held sibling) + 1 > 1", bp)
		}
	}},
	{"Retry/ReleaseQuarantineAndRetry/Unknown", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		writesNothing(t, ctx, s, "release and retry of an unknown fingerprint", func() {
			r, err := s.ReleaseQuarantineAndRetry(ctx, "never")
			if err != nil || r != (headgate.RetryResult{}) {
				t.Errorf("release and retry of a fingerprint never quarantined: %+v, %v; want nothing lifted, released or retried", r, err)
			}
		})
	}},
	{"Retry/Refused/UnknownID", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		err := unchanged(t, ctx, s, "retry unknown", func() error { _, err := s.Retry(ctx, "nope", nil); return err })
		if !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("retry unknown: %v, want ErrJobNotFound", err)
		}
	}},
	{"Retry/Refused/NotFinished", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later := job("scheduled")
		later.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, job("running"))
		admitOne(t, ctx, s)
		mustEnqueue(t, ctx, s, job("available"), later)
		for _, st := range []headgate.State{headgate.StateRunning, headgate.StateAvailable, headgate.StateScheduled} {
			id := string(st)
			err := unchanged(t, ctx, s, "retry "+id, func() error { _, err := s.Retry(ctx, id, nil); return err })
			if e := wantErr[*headgate.NotRetryableError](t, err); e != nil && (e.State != st || e.JobID != id) {
				t.Errorf("retry %s: %+v", id, e)
			}
		}
	}},
	{"Retry/Refused/UniqueHolder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		x := job("x")
		x.UniqueKey = "u"
		mustEnqueue(t, ctx, s, x)
		mustCancel(t, ctx, s, "x")
		y := job("y")
		y.UniqueKey = "u"
		mustEnqueue(t, ctx, s, y)
		err := unchanged(t, ctx, s, "retry with the key held", func() error { _, err := s.Retry(ctx, "x", nil); return err })
		if d := wantErr[*headgate.DuplicateError](t, err); d != nil && (d.ExistingID != "y" || d.State != headgate.StateAvailable) {
			t.Errorf("duplicate names %+v, want y available", d)
		}
		// Once the holder is gone the retry takes the key again.
		if _, err := s.Delete(ctx, "y"); err != nil {
			t.Fatal(err)
		}
		mustRetry(t, ctx, s, "x", nil)
		z := job("z")
		z.UniqueKey = "u"
		_, err = s.Enqueue(ctx, z)
		if d := wantErr[*headgate.DuplicateError](t, err); d != nil && d.ExistingID != "x" {
			t.Errorf("after the retry the key is held by %q, want x", d.ExistingID)
		}
	}},
	{"Retry/Refused/Backpressure", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.Queue, b.Queue = "bp", "bp"
		mustEnqueue(t, ctx, s, a, b)
		mustCancel(t, ctx, s, "a")
		if err := s.SetEnqueueLimit(ctx, "bp", 1); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "retry into a full queue", func() error { _, err := s.Retry(ctx, "a", nil); return err })
		if bp := wantErr[*headgate.BackpressureError](t, err); bp != nil && (bp.Queue != "bp" || bp.Limit != 1 || bp.Current != 1 || bp.Incoming != 1) {
			t.Errorf("backpressure %+v", bp)
		}
	}},
	{"Retry/Corrupt", func(t *testing.T, s *headgate.Store) {
		// y's partition is not the call's to touch: x is retried into partition t2.
		keys := keysNamed("job:x", "retained", "unique", "limits", "quarantine", "q:default:counts", "q:default:ring",
			"q:default:drr", "q:default:wake")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				x := job("x")
				x.UniqueKey = "u1"
				mustEnqueue(t, ctx, s, x, job("y"))
				if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 10); err != nil {
					t.Fatal(err)
				}
				mustCancel(t, ctx, s, "x")
			},
			func(ctx context.Context, s *headgate.Store) error {
				_, err := s.Retry(ctx, "x", &headgate.RetryOptions{Edit: &headgate.JobEdit{PartitionKey: new("t2")}})
				return err
			},
			headgate.StateAvailable))
	}},
}

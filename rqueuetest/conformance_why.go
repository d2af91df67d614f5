package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// whyCases cover the Why read of the job contract: each reason, with its numbers, on the
// frozen store clock. Every case but the one about workers beats a live worker of the
// default queue first, so that only the reasons under test apply.
var whyCases = []conformanceCase{
	{"Why/NotFound", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if _, err := s.Why(ctx, "nope", nil); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("why of an unknown id: %v, want ErrJobNotFound", err)
		}
		if _, err := s.Why(ctx, "a", &headgate.WhyOptions{Quantum: -1}); wantErr[*headgate.InvalidError](t, err) == nil {
			t.Errorf("why with quantum -1: %v", err)
		}
	}},
	{"Why/Staged", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		e := job("a")
		e.Pending = true
		mustEnqueue(t, ctx, s, e)
		wantWhy(t, ctx, s, "a", headgate.StatePending, headgate.Reason{Reason: headgate.WhyStaged})
	}},
	{"Why/Scheduled", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		e := job("a")
		e.ScheduledAt = epoch.Add(90 * time.Second)
		mustEnqueue(t, ctx, s, e)
		wantWhy(t, ctx, s, "a", headgate.StateScheduled, headgate.Reason{Reason: headgate.WhyScheduled, At: epoch.Add(90 * time.Second)})
	}},
	{"Why/Retrying", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom", Delay: time.Hour})
		wantWhy(t, ctx, s, "a", headgate.StateRetryable, headgate.Reason{Reason: headgate.WhyRetrying,
			At: epoch.Add(time.Hour), Attempt: 1, MaxAttempts: headgate.MaxAttemptsDefault})
	}},
	{"Why/Paused", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		if err := s.PauseQueue(ctx, headgate.QueueDefault); err != nil {
			t.Fatal(err)
		}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyPaused, Queue: headgate.QueueDefault},
			turn(0, 0, 0, 1, 0, 1))
	}},
	{"Why/QuarantinedFingerprint", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		quarantinedWithHeldSibling(t, ctx, s, "a", "sib")
		beat(t, ctx, s, "w1", time.Hour) // the clock moved past the first beat's liveness
		wantWhy(t, ctx, s, "sib", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyQuarantined, Fingerprint: "poison", CrashedJob: "a"})
		wantWhy(t, ctx, s, "a", headgate.StateQuarantined, headgate.Reason{Reason: headgate.WhyFinished,
			State: headgate.StateQuarantined, At: storeNow(t, ctx, s).Add(-time.Hour), Outcome: "lease_lost", Message: "lease expired",
			Fingerprint: "poison"})
	}},
	{"Why/RateLimited", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		oneOfTwoAdmitted(t, ctx, s, 1)
		// The class spent its one token at epoch and refills one a minute.
		limited := headgate.Reason{Reason: headgate.WhyRateLimited, Class: "c", Tokens: 0, Weight: 1, Burst: 1,
			At: epoch.Add(time.Minute)}
		wantWhy(t, ctx, s, "b", headgate.StateAvailable, limited)
		advance(t, ctx, s, 20*time.Second)
		wantWhy(t, ctx, s, "b", headgate.StateAvailable, limited)
	}},
	{"Why/RateLimitedNeverRefills", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		// Limit 0: the burst is all the class ever admits; no time brings more tokens.
		oneOfTwoAdmitted(t, ctx, s, 0)
		advance(t, ctx, s, time.Hour)
		beat(t, ctx, s, "w1", time.Hour)
		wantWhy(t, ctx, s, "b", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyRateLimited, Class: "c", Tokens: 0, Weight: 1, Burst: 1})
	}},
	{"Why/TooHeavy", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		if err := s.SetRateLimit(ctx, "c", headgate.RateLimit{Limit: 2, Window: time.Minute, Burst: 2}); err != nil {
			t.Fatal(err)
		}
		a := job("a")
		a.RateClass, a.Weight = "c", 3
		mustEnqueue(t, ctx, s, a)
		// Before admission meets it, too: no worker has tried it, and none ever could.
		wantWhy(t, ctx, s, "a", headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyTooHeavy, Class: "c", Weight: 3, Burst: 2},
			turn(0, 0, 0, 1, 0, 1))
		if got := mustAdmit(t, ctx, s, admitReq("w1", 1)); len(got) != 0 {
			t.Fatalf("admitted %d jobs, want none", len(got))
		}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable, headgate.Reason{Reason: headgate.WhyTooHeavy, Class: "c", Weight: 3, Burst: 2})
	}},
	{"Why/PinnedWorkerGone", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		a, b := job("a"), job("b")
		a.StickyWorker, b.StickyWorker = "w9", "w8"
		mustEnqueue(t, ctx, s, a, b)
		beat(t, ctx, s, "w9", 10*time.Second)
		wantWhy(t, ctx, s, "a", headgate.StateAvailable, turn(0, 0, 0, 1, 0, 1))
		advance(t, ctx, s, 10*time.Second)
		wantWhy(t, ctx, s, "a", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyPinnedWorkerGone, Worker: "w9", LastSeen: epoch}, turn(0, 0, 0, 1, 0, 1))
		// A worker that never beat has no last-seen time.
		wantWhy(t, ctx, s, "b", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyPinnedWorkerGone, Worker: "w8"}, turn(0, 0, 0, 1, 0, 1))
	}},
	{"Why/PinnedWorkerServesOther", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		a := job("a")
		a.StickyWorker = "w9"
		mustEnqueue(t, ctx, s, a)
		hb := headgate.Heartbeat{ID: "w9", Queues: []string{"mail"}, Kinds: []string{"test:job"}, Liveness: time.Hour}
		if _, err := s.Heartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyNoLiveWorker, Queue: headgate.QueueDefault, Worker: "w9"}, turn(0, 0, 0, 1, 0, 1))
		hb.Queues, hb.Kinds = []string{headgate.QueueDefault}, []string{"other"}
		if _, err := s.Heartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyNoWorkerForKind, Queue: headgate.QueueDefault, Kind: "test:job", Worker: "w9"},
			turn(0, 0, 0, 1, 0, 1))
	}},
	{"Why/NoLiveWorker", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		none := headgate.Reason{Reason: headgate.WhyNoLiveWorker, Queue: headgate.QueueDefault}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable, none, turn(0, 0, 0, 1, 0, 1))
		// A live worker of the queue without a handler for the job's kind.
		if _, err := s.Heartbeat(ctx, headgate.Heartbeat{ID: "w1", Queues: []string{headgate.QueueDefault},
			Kinds: []string{"other"}, Liveness: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		wantWhy(t, ctx, s, "a", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyNoWorkerForKind, Queue: headgate.QueueDefault, Kind: "test:job"},
			turn(0, 0, 0, 1, 0, 1))
		// Its liveness over, the worker no longer counts.
		advance(t, ctx, s, 10*time.Second)
		wantWhy(t, ctx, s, "a", headgate.StateAvailable, none, turn(0, 0, 0, 1, 0, 1))
	}},
	{"Why/FingerprintCap", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		p, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.FingerprintInflight = 1
		if err := s.SetPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		a, b := job("a"), job("b")
		a.Fingerprint, b.Fingerprint = "f", "f"
		mustEnqueue(t, ctx, s, a, b)
		admitOne(t, ctx, s)
		wantWhy(t, ctx, s, "b", headgate.StateAvailable,
			headgate.Reason{Reason: headgate.WhyFingerprintCap, Fingerprint: "f", Running: 1, Cap: 1},
			turn(0, 0, 0, 1, 0, 1))
	}},
	{"Why/PartitionTurn", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		var jobs []headgate.Envelope
		for _, id := range []string{"A1", "A2", "A3", "B1", "B2", "C1"} {
			e := job(id)
			e.PartitionKey = id[:1]
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
		// Quantum 1: A1 B1 C1 A2, then B2.
		wantWhy(t, ctx, s, "B2", headgate.StateAvailable, turn(4, 1, 1, 3, 1, 1))
		// Quantum 2: A1 A2 B1, then B2.
		wantWhyAt(t, ctx, s, "B2", 2, headgate.StateAvailable, turn(3, 1, 1, 3, 0, 2))
		// Admission agrees: four jobs go before B2.
		var got []string
		for _, c := range mustAdmit(t, ctx, s, admitReq("w1", 4)) {
			got = append(got, c.Envelope.ID)
		}
		if strings.Join(got, " ") != "A1 B1 C1 A2" {
			t.Errorf("admitted %v, want A1 B1 C1 A2", got)
		}
		// C emptied; B, whose turn comes next, leads A.
		wantWhy(t, ctx, s, "B2", headgate.StateAvailable, turn(0, 0, 0, 2, 0, 1))
		if c := admitOne(t, ctx, s); c.Envelope.ID != "B2" {
			t.Errorf("admitted %s next, want B2", c.Envelope.ID)
		}
	}},
	{"Why/QueueFull", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 2); err != nil {
			t.Fatal(err)
		}
		wantWhy(t, ctx, s, "b", headgate.StateAvailable, turn(1, 1, 0, 1, 1, 1),
			headgate.Reason{Reason: headgate.WhyQueueFull, Queue: headgate.QueueDefault, Unfinished: 2, Limit: 2})
	}},
	{"Why/Running", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		// Admitted 5s after it was enqueued: running since its admission.
		advance(t, ctx, s, 5*time.Second)
		admitted := epoch.Add(5 * time.Second)
		c := admitOne(t, ctx, s)
		running := headgate.Reason{Reason: headgate.WhyRunning, Worker: "w1", LeaseID: c.LeaseID, Since: admitted,
			Fence: c.Fence, LeaseUntil: admitted.Add(time.Minute)}
		wantWhy(t, ctx, s, "a", headgate.StateRunning, running)
		// The worker stops beating and the lease runs out: the reclaimer is next.
		advance(t, ctx, s, 2*time.Hour)
		wantWhy(t, ctx, s, "a", headgate.StateRunning, running,
			headgate.Reason{Reason: headgate.WhyLeaseExpired, At: admitted.Add(time.Minute)},
			headgate.Reason{Reason: headgate.WhyWorkerGone, Worker: "w1", LastSeen: epoch})
	}},
	{"Why/Finished", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		b := job("b")
		b.MaxAttempts = 1
		mustEnqueue(t, ctx, s, job("a"), b)
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
		advance(t, ctx, s, time.Second)
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom"})
		wantWhy(t, ctx, s, "a", headgate.StateCompleted, headgate.Reason{Reason: headgate.WhyFinished,
			State: headgate.StateCompleted, At: epoch, Outcome: "success"})
		wantWhy(t, ctx, s, "b", headgate.StateArchived, headgate.Reason{Reason: headgate.WhyFinished,
			State: headgate.StateArchived, At: epoch.Add(time.Second), Outcome: "retry", Message: "boom"})
	}},
	{"Why/Corrupt", func(t *testing.T, s *headgate.Store) {
		ctx := whySetup(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		if err := s.Client().HSet(ctx, nsKey(s, "job:a"), "prio", "x").Err(); err != nil {
			t.Fatal(err)
		}
		e, err := s.Why(ctx, "a", nil)
		if err != nil {
			t.Fatalf("why: %v", err)
		}
		want := headgate.Reason{Reason: headgate.WhyCorrupt, Message: "prio is not an integer: x"}
		if len(e.Reasons) != 1 || e.Reasons[0] != want {
			t.Errorf("why of a corrupt job: %+v, want %+v", e.Reasons, want)
		}
		// A structure of the wrong type refuses the call, naming it.
		mustEnqueue(t, ctx, s, job("b"))
		paused := nsKey(s, "paused")
		if err := s.Client().Set(ctx, paused, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, err = s.Why(ctx, "b", nil)
		if c := wantErr[*headgate.CorruptError](t, err); c != nil && c.Key != paused {
			t.Errorf("why over a corrupt paused set: %v, want the key %s", err, paused)
		}
		if err := s.Client().Del(ctx, paused).Err(); err != nil {
			t.Fatal(err)
		}
	}},
}

// whySetup freezes the clock and beats a live worker (w1) of the default queue that
// handles test:job for an hour.
func whySetup(t *testing.T, s *headgate.Store) context.Context {
	t.Helper()
	ctx := freeze(t, s)
	beat(t, ctx, s, "w1", time.Hour)
	return ctx
}

// beat records a heartbeat of worker id, serving the default queue and test:job.
func beat(t testing.TB, ctx context.Context, s *headgate.Store, id string, liveness time.Duration) {
	t.Helper()
	if _, err := s.Heartbeat(ctx, headgate.Heartbeat{ID: id, Queues: []string{headgate.QueueDefault},
		Kinds: []string{"test:job"}, Concurrency: 1, Liveness: liveness}); err != nil {
		t.Fatalf("heartbeat of %s: %v", id, err)
	}
}

// turn is a partition_turn reason: ahead, in its partition, partitions ahead, partitions,
// rounds, quantum (exact).
func turn(ahead, inPartition, partitionsAhead, partitions, rounds, quantum int64) headgate.Reason {
	return headgate.Reason{Reason: headgate.WhyPartitionTurn, Ahead: ahead, AheadInPartition: inPartition,
		PartitionsAhead: partitionsAhead, Partitions: partitions, Rounds: rounds, Quantum: quantum, Exact: true}
}

func wantWhy(t testing.TB, ctx context.Context, s *headgate.Store, id string, state headgate.State, want ...headgate.Reason) {
	t.Helper()
	wantWhyAt(t, ctx, s, id, 0, state, want...)
}

// wantWhyAt checks Why of id at a quantum (0: the default): its state, the store's now,
// and exactly the reasons want, in order.
func wantWhyAt(t testing.TB, ctx context.Context, s *headgate.Store, id string, quantum int, state headgate.State, want ...headgate.Reason) {
	t.Helper()
	e, err := s.Why(ctx, id, &headgate.WhyOptions{Quantum: quantum})
	if err != nil {
		t.Errorf("why %s: %v", id, err)
		return
	}
	if now := storeNow(t, ctx, s); e.ID != id || e.State != state || !e.Now.Equal(now) {
		t.Errorf("why %s: id %s, state %s at %v; want %s at %v", id, e.ID, e.State, e.Now, state, now)
	}
	if got, exp := canonicalReasons(e.Reasons), canonicalReasons(want); !reflect.DeepEqual(got, exp) {
		t.Errorf("why %s:\n got %s\nwant %s", id, formatReasons(got), formatReasons(exp))
	}
	for _, r := range e.Reasons {
		if s := r.Sentence(e.Now); s == "" || s == string(r.Reason) {
			t.Errorf("why %s: reason %s has no sentence", id, r.Reason)
		}
	}
}

// canonicalReasons puts the times of reasons in one location, so equal instants compare
// equal.
func canonicalReasons(rs []headgate.Reason) []headgate.Reason {
	out := make([]headgate.Reason, len(rs))
	for i, r := range rs {
		for _, t := range []*time.Time{&r.At, &r.Since, &r.LeaseUntil, &r.LastSeen} {
			if !t.IsZero() {
				*t = time.UnixMilli(t.UnixMilli()).UTC()
			}
		}
		out[i] = r
	}
	return out
}

func formatReasons(rs []headgate.Reason) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %+v", r)
	}
	return b.String()
}

// oneOfTwoAdmitted sets rate class c to limit a minute with a burst of 1, enqueues jobs a
// and b in it, and checks that an admission of two takes one: b waits for c's tokens.
func oneOfTwoAdmitted(t *testing.T, ctx context.Context, s *headgate.Store, limit int64) {
	t.Helper()
	if err := s.SetRateLimit(ctx, "c", headgate.RateLimit{Limit: limit, Window: time.Minute, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	a, b := job("a"), job("b")
	a.RateClass, b.RateClass = "c", "c"
	mustEnqueue(t, ctx, s, a, b)
	if got := mustAdmit(t, ctx, s, admitReq("w1", 2)); len(got) != 1 {
		t.Fatalf("admitted %d jobs, want 1", len(got))
	}
}

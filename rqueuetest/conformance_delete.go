package rqueuetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// deleteCases cover the operator's Delete of a job that is not running.
var deleteCases = []conformanceCase{
	{"Delete/EachState", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		pending, scheduled, unique := job("j-pending"), job("j-scheduled"), job("j-unique")
		pending.Pending = true
		scheduled.ScheduledIn = time.Hour
		unique.UniqueKey = "u"
		unique.PartitionKey = "t1"
		failing := job("j-retryable")
		quarantinedWithHeldSibling(t, ctx, s, "j-quarantined", "j-held")
		mustEnqueue(t, ctx, s, failing)
		finishAs(t, ctx, s, "j-retryable", headgate.OutcomeRetry)
		mustEnqueue(t, ctx, s, job("j-completed"))
		finishAs(t, ctx, s, "j-completed", headgate.OutcomeSuccess)
		mustEnqueue(t, ctx, s, pending, scheduled, unique)
		want := map[string]headgate.State{"pending": headgate.StatePending, "scheduled": headgate.StateScheduled,
			"retryable": headgate.StateRetryable, "completed": headgate.StateCompleted,
			"quarantined": headgate.StateQuarantined, "held": headgate.StateAvailable, "unique": headgate.StateAvailable}
		for id, st := range want {
			got, err := s.Delete(ctx, "j-"+id)
			if err != nil || got != st {
				t.Errorf("delete %s: %s, %v; want %s", id, got, err, st)
			}
			wantState(t, ctx, s, "j-"+id, headgate.StateDeleted)
		}
		// No key of a deleted job is left, and no index names it. The quarantine stays
		// (naming the job that crashed) until an operator releases the fingerprint, and an
		// admission's record (naming the jobs it leased) until it expires with the leases.
		snap := snapshot(t, ctx, s)
		for _, line := range strings.Split(snap, "\n") {
			if strings.Contains(line, "j-") && !strings.Contains(line, "}:quarantine ") && !strings.Contains(line, "}:admission:") {
				t.Errorf("a deleted job is still in the store: %s", line)
			}
		}
		advance(t, ctx, s, 2*time.Hour)
		if n := mustPromote(t, ctx, s); n != 0 {
			t.Errorf("promoted %d deleted jobs", n)
		}
	}},
	{"Delete/AvailableReleasesUniqueKey", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.UniqueKey, a.PartitionKey, b.PartitionKey = "u", "t1", "t2"
		mustEnqueue(t, ctx, s, a, b)
		if st, err := s.Delete(ctx, "a"); err != nil || st != headgate.StateAvailable {
			t.Fatalf("delete a: %s, %v", st, err)
		}
		again := job("again")
		again.UniqueKey = "u"
		mustEnqueue(t, ctx, s, again)
		got := mustAdmit(t, ctx, s, admitReq("w", 5))
		if len(got) != 2 || got[0].Envelope.ID == "a" || got[1].Envelope.ID == "a" {
			t.Errorf("admitted %v, want b and again", ids(got))
		}
	}},
	{"Delete/RateParked", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustSetRateLimit(t, ctx, s, "c", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
		a, b := job("a"), job("j-parked")
		a.RateClass, b.RateClass = "c", "c"
		mustEnqueue(t, ctx, s, a, b)
		admitOne(t, ctx, s) // a takes the one token; b is set aside for its class
		if got := mustAdmit(t, ctx, s, admitReq("w", 1)); len(got) != 0 {
			t.Fatalf("admitted %v without tokens", ids(got))
		}
		if !strings.Contains(snapshot(t, ctx, s), "}:parked:c ") {
			t.Fatalf("j-parked is not parked for its class:\n%s", snapshot(t, ctx, s))
		}
		if st, err := s.Delete(ctx, "j-parked"); err != nil || st != headgate.StateAvailable {
			t.Fatalf("delete parked: %s, %v", st, err)
		}
		for _, line := range strings.Split(snapshot(t, ctx, s), "\n") {
			if strings.Contains(line, "j-") {
				t.Errorf("the deleted job is still in the store: %s", line)
			}
		}
	}},
	{"Delete/Refused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("running"))
		admitOne(t, ctx, s)
		err := unchanged(t, ctx, s, "delete running", func() error { _, err := s.Delete(ctx, "running"); return err })
		if e := wantErr[*headgate.JobRunningError](t, err); e != nil && e.JobID != "running" {
			t.Errorf("running error names %q", e.JobID)
		}
		err = unchanged(t, ctx, s, "delete unknown", func() error { _, err := s.Delete(ctx, "nope"); return err })
		if !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("delete unknown: %v", err)
		}
	}},
	{"Delete/RepairedCorruptJob", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("x"), job("y"))
		key := nsKey(s, "job:x")
		if err := s.Client().HSet(ctx, key, "prio", "x").Err(); err != nil {
			t.Fatal(err)
		}
		// While its data is unusable the job is parked, not deleted.
		if _, err := s.Delete(ctx, "x"); wantErr[*headgate.JobParkedError](t, err) == nil {
			t.Fatalf("delete of a job with corrupt data: %v", err)
		}
		// Repaired, it is deleted, and no longer listed as parked.
		if err := s.Client().HSet(ctx, key, "prio", "0").Err(); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Delete(ctx, "x"); err != nil || st != headgate.StateAvailable {
			t.Fatalf("delete of the repaired job = %s, %v; want it deleted from available", st, err)
		}
		parked, err := s.CorruptJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if reason, ok := parked["x"]; ok {
			t.Errorf("the deleted job is still listed as parked: %q", reason)
		}
		if _, err := s.GetJob(ctx, "x"); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("the repaired job after its delete: %v, want ErrJobNotFound", err)
		}
		checkCounts(t, s)
	}},
	{"Delete/Corrupt/Available", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "unique", "q:default:")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, x, y := job("a"), job("x"), job("y")
				a.PartitionKey, x.PartitionKey, y.PartitionKey = "t1", "t1", "t1"
				x.UniqueKey = "u1"
				mustEnqueue(t, ctx, s, a, x, y)
				mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
			},
			func(ctx context.Context, s *headgate.Store) error { _, err := s.Delete(ctx, "x"); return err },
			headgate.StateDeleted))
	}},
	{"Delete/Corrupt/Finished", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "retained", "q:default:counts")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustEnqueue(t, ctx, s, job("x"), job("y"))
				mustCancel(t, ctx, s, "x")
			},
			func(ctx context.Context, s *headgate.Store) error { _, err := s.Delete(ctx, "x"); return err },
			headgate.StateDeleted))
	}},
}

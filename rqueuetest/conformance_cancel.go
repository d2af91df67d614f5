package rqueuetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// mustCancel cancels job id, failing the test on an error.
func mustCancel(t testing.TB, ctx context.Context, s *headgate.Store, id string) {
	t.Helper()
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatalf("cancel %s: %v", id, err)
	}
}

// cancelCases cover the Cancel transition of the job contract.
var cancelCases = []conformanceCase{
	{"Cancel/UnfinishedOnlyHolderRejected", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later := job("scheduled")
		later.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, job("running"), job("available"), later)
		c := admitOne(t, ctx, s)
		for _, id := range []string{"running", "available", "scheduled"} {
			if err := s.Cancel(ctx, id); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
			wantState(t, ctx, s, id, headgate.StateCancelled)
		}
		if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); err == nil {
			t.Errorf("the cancelled job's holder acked")
		}
		err := unchanged(t, ctx, s, "cancel terminal", func() error { return s.Cancel(ctx, "running") })
		wantErr[*headgate.NotCancellableError](t, err)
		if err := s.Cancel(ctx, "nope"); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("cancel unknown: %v", err)
		}
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
			t.Errorf("admitted cancelled jobs %v", ids(got))
		}
		advance(t, ctx, s, 2*time.Hour)
		if n, _, err := s.PromoteDue(ctx, 10); err != nil || n != 0 {
			t.Errorf("promoted a cancelled job (err %v)", err)
		}
	}},
	// Cancel reads the job, then the keys of the state it leaves (its partition and ring,
	// the scheduled or lease index), the queue's counts, the unique and retained indexes.
	// Each corruption of each of those keys either refuses the call with nothing written
	// or, for the job's own data, parks the job.
	{"Cancel/Corrupt/Running", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "leases", "retained", "unique", "q:default:counts")
		assertCorruptionSafe(t, s, cancelCorruptCheck(keys, func(t testing.TB, ctx context.Context, s *headgate.Store) {
			x := job("x")
			x.UniqueKey = "u1"
			mustEnqueue(t, ctx, s, x, job("y"), job("z"))
			if c := admitOne(t, ctx, s); c.Envelope.ID != "x" {
				t.Fatalf("admitted %s, want x", c.Envelope.ID)
			}
			// A finished job, so the retained index exists to be corrupted.
			mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
		}))
	}},
	{"Cancel/OwnDataCorruptIsParkedNotCancelled", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("x"))
		if err := s.Client().HSet(ctx, nsKey(s, "job:x"), "prio", "x").Err(); err != nil {
			t.Fatal(err)
		}
		// The job is parked, not cancelled: the cancel must not report it cancelled.
		p := wantErr[*headgate.JobParkedError](t, s.Cancel(ctx, "x"))
		if p != nil && (p.JobID != "x" || !strings.Contains(p.Reason, "prio")) {
			t.Errorf("cancel of a job with corrupt data: %+v, want job x parked for its prio", p)
		}
		parked, err := s.CorruptJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parked["x"]; !ok {
			t.Errorf("the job is not parked: CorruptJobs = %v", parked)
		}
	}},
	{"Cancel/Corrupt/Available", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "retained", "unique", "q:default:")
		assertCorruptionSafe(t, s, cancelCorruptCheck(keys, func(t testing.TB, ctx context.Context, s *headgate.Store) {
			a, x, y := job("a"), job("x"), job("y")
			a.PartitionKey, x.PartitionKey, y.PartitionKey = "t1", "t1", "t1"
			x.UniqueKey = "u1"
			mustEnqueue(t, ctx, s, a, x, y)
			// Admitting a leaves x and y in the partition, and the ring's round-robin
			// state written.
			mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
		}))
	}},
	{"Cancel/Corrupt/Scheduled", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "scheduled", "unique", "q:default:counts")
		assertCorruptionSafe(t, s, cancelCorruptCheck(keys, func(t testing.TB, ctx context.Context, s *headgate.Store) {
			x, y := job("x"), job("y")
			x.ScheduledAt, y.ScheduledAt = epoch.Add(time.Hour), epoch.Add(time.Hour)
			x.UniqueKey = "u1"
			mustEnqueue(t, ctx, s, x, y)
		}))
	}},
}

// cancelCorruptCheck cancels job "x" of the state setup builds, corrupting each key the
// cancel reads.
// keys selects them (the others of the state are not the call's to touch).
func cancelCorruptCheck(keys func(string) bool, setup func(t testing.TB, ctx context.Context, s *headgate.Store)) corruptCheck {
	// The numeric job fields cancel reads (JOB_FIELDS in lua/lib.lua); a bad weight, which
	// it does not read, leaves the job cancellable.
	read := []string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence"}
	mustPark := func(corrupted, field string) bool {
		return corrupted == "job:x" && (field == "" || slices.Contains(read, field))
	}
	return corruptCheck{
		setup: setup,
		keys:  keys,
		// A job whose own data is corrupt is parked, not cancelled: the cancel says so
		// (*JobParkedError) where the parking is what it wrote.
		call: func(ctx context.Context, s *headgate.Store) error {
			err := s.Cancel(ctx, "x")
			if p := (*headgate.JobParkedError)(nil); errors.As(err, &p) {
				return nil
			}
			return err
		},
		progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
			if corrupted != "job:x" {
				wantState(t, ctx, s, "x", headgate.StateCancelled)
			}
		},
		mustPark: mustPark,
	}
}

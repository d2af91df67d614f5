package rqueuetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// admitCorruptCases: Admit on corrupt data never leaves a job half-moved. Each key the
// call reads is corrupted in turn (corrupt.go): the call either fails with nothing
// written, or parks the corrupt job and admits the others, indexes and counts exact.
var admitCorruptCases = []conformanceCase{
	{"Admit/Corrupt/PlainJobsAndPartitions", admitCorruptPlain},
	{"Admit/Corrupt/EveryKeyAdmissionReads", admitCorruptEveryKey},
	{"Admit/Corrupt/ParkedJobsReturning", admitCorruptUnpark},
}

// admitCorruptPlain: three plain jobs in two partitions; the job hashes, partitions, ring,
// counts and leases corrupted in turn.
func admitCorruptPlain(t *testing.T, s *headgate.Store) {
	assertCorruptionSafe(t, s, corruptCheck{
		setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
			mustEnqueue(t, ctx, s, rated("a1", "a", "", 0, 1), rated("a2", "a", "", 0, 1), rated("c1", "c", "", 0, 1))
		},
		keys: keysNamed("job:", "q:default:", "leases"),
		call: func(ctx context.Context, s *headgate.Store) error {
			_, err := s.Admit(ctx, admitReq("w", 10))
			return err
		},
		mustPark: func(corrupted, field string) bool { return admissionField(field) },
	})
}

// corruptAdmitBase: a rate class with tokens (rc) and one without (empty); the
// namespace policy with a fingerprint cap; a job of the empty class parked; a job of
// fingerprint fa running.
func corruptAdmitBase(t testing.TB, ctx context.Context, s *headgate.Store) {
	t.Helper()
	mustSetRateLimit(t, ctx, s, "rc", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 10})
	mustSetRateLimit(t, ctx, s, "empty", headgate.RateLimit{Limit: 1, Window: 24 * time.Hour, Burst: 1})
	if err := s.Client().HSet(ctx, nsKey(s, "policy"), "fp_inflight", 5).Err(); err != nil {
		t.Fatal(err)
	}
	spendClass(t, ctx, s, "empty", 1)
	mustEnqueue(t, ctx, s, rated("p1", "b", "empty", 9, 1))
	if got := mustAdmit(t, ctx, s, admitReq("w", 1)); len(got) != 0 {
		t.Fatalf("admitted %v from an empty class", ids(got))
	}
	r1 := job("r1")
	r1.Fingerprint = "fa"
	mustEnqueue(t, ctx, s, r1)
	admitOne(t, ctx, s)
}

func admitCorruptEveryKey(t *testing.T, s *headgate.Store) {
	a1 := rated("a1", "a", "rc", 0, 2)
	a1.Fingerprint = "fa"
	assertCorruptionSafe(t, s, corruptCheck{
		setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
			corruptAdmitBase(t, ctx, s)
			mustEnqueue(t, ctx, s, a1, rated("a2", "a", "", 0, 1), rated("c1", "c", "", 0, 1))
		},
		// parked:empty is not read: its class is not due.
		keys: keysNamed("job:", "q:default:", "rate:", "starved", "policy", "fprunning",
			"leases", "corrupt", "quarantine"),
		call: func(ctx context.Context, s *headgate.Store) error {
			_, err := s.Admit(ctx, admitReq("w", 10))
			return err
		},
		mustPark: func(corrupted, field string) bool {
			return (corrupted == "job:a1" || corrupted == "job:a2" || corrupted == "job:c1") && admissionField(field)
		},
		progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
			if corrupted != "job:c1" {
				wantState(t, ctx, s, "c1", headgate.StateRunning)
			}
		},
	})
}

// admitCorruptUnpark: the parked job's class is made due again (RemoveRateLimit), so
// the call returns it to its partition and admits it; corrupting what that reads parks
// the job as corrupt or looks past it.
func admitCorruptUnpark(t *testing.T, s *headgate.Store) {
	assertCorruptionSafe(t, s, corruptCheck{
		setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
			corruptAdmitBase(t, ctx, s)
			if err := s.RemoveRateLimit(ctx, "empty"); err != nil {
				t.Fatal(err)
			}
			mustEnqueue(t, ctx, s, rated("c1", "c", "", 0, 1))
		},
		keys: keysNamed("job:p1", "job:c1", "parked:", "starved", "q:default:p:", "q:default:ring"),
		call: func(ctx context.Context, s *headgate.Store) error {
			_, err := s.Admit(ctx, admitReq("w", 10))
			return err
		},
		mustPark: func(corrupted, field string) bool {
			return (corrupted == "job:p1" || corrupted == "job:c1") && admissionField(field)
		},
		progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
			if !strings.HasSuffix(corrupted, "c1") {
				wantState(t, ctx, s, "c1", headgate.StateRunning)
			}
		},
	})
}

// admissionField: a corruption admission must detect: the whole hash, or a numeric field
// the scripts use (not, say, the creation time, which only Go reads).
func admissionField(field string) bool {
	return field == "" || slices.Contains(jobNumericFields, field)
}

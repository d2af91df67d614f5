package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// reclaimCorruptCases corrupt each key a reclaim reads: the call fails with nothing
// written, or parks the corrupt job and reclaims the others.
var reclaimCorruptCases = []conformanceCase{
	{"Reclaim/Corrupt", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				p, err := s.Policy(ctx)
				if err != nil {
					t.Fatal(err)
				}
				p.CrashLimit = 2
				if err := s.SetPolicy(ctx, p); err != nil {
					t.Fatal(err)
				}
				a, b, c := job("a"), job("b"), job("c")
				a.UniqueKey, a.Fingerprint, b.Fingerprint = "ua", "fa", "fb"
				mustEnqueue(t, ctx, s, a, b, c)
				// a crashes once in a step (crash:s1, errors:a), then runs again.
				cl := admitOne(t, ctx, s)
				if err := s.Checkpoint(ctx, cl.LeaseRef(), headgate.Checkpoint{InProgress: "s1"}); err != nil {
					t.Fatal(err)
				}
				advance(t, ctx, s, time.Minute)
				if _, err := s.ReclaimExpired(ctx, 10); err != nil {
					t.Fatal(err)
				}
				advance(t, ctx, s, time.Second)
				if _, _, err := s.PromoteDue(ctx, 10); err != nil {
					t.Fatal(err)
				}
				mustAdmit(t, ctx, s, admitReq("w", 3))
				advance(t, ctx, s, time.Minute)
			},
			keys: keysNamed("job:", "leases", "scheduled", "retained", "unique", "quarantine", "policy", "errors:", "q:default:counts"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ReclaimExpired(ctx, 10)
				return err
			},
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				// a reaches the crash limit; b and c crash for the first time.
				want := map[string]headgate.State{"a": headgate.StateQuarantined, "b": headgate.StateRetryable, "c": headgate.StateRetryable}
				for id, st := range want {
					if "job:"+id != corrupted && corrupted != "policy" {
						wantState(t, ctx, s, id, st)
					}
				}
			},
			mustPark: func(corrupted, field string) bool {
				return field == "" || slices.Contains([]string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash",
					"charge", "fence", "crash:s1", "errb"}, field)
			},
		})
	}},
}

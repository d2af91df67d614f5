package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// ackCorruptCases corrupt each key an ack batch reads: the call fails with nothing
// written, or parks the corrupt job and applies the other acks.
var ackCorruptCases = []conformanceCase{
	{"Ack/Corrupt", func(t *testing.T, s *headgate.Store) {
		var leases map[string]headgate.LeaseRef
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				p, err := s.Policy(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.SetPolicy(ctx, p); err != nil { // the policy key exists
					t.Fatal(err)
				}
				a, b, c := job("a"), job("b"), job("c")
				a.UniqueKey, b.Fingerprint, c.StickyWorker = "ua", "fb", "w"
				mustEnqueue(t, ctx, s, a, b, c)
				leases = map[string]headgate.LeaseRef{}
				for _, cl := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
					leases[cl.Envelope.ID] = cl.LeaseRef()
				}
				// b has a history already (errors:b, errb).
				if _, err := s.Ack(ctx, leases["b"], headgate.OutcomeRetry, &headgate.AckOpts{Error: "once", Delay: time.Second}); err != nil {
					t.Fatal(err)
				}
				advance(t, ctx, s, time.Second)
				if _, _, err := s.PromoteDue(ctx, 10); err != nil {
					t.Fatal(err)
				}
				for _, cl := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
					leases[cl.Envelope.ID] = cl.LeaseRef()
				}
			},
			keys: keysNamed("job:", "leases", "scheduled", "retained", "unique", "policy", "errors:", "q:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.AckMany(ctx, []headgate.AckRequest{
					{Lease: leases["a"], Outcome: headgate.OutcomeSuccess, Opts: &headgate.AckOpts{Logs: []string{"done"}}},
					{Lease: leases["b"], Outcome: headgate.OutcomeRetry, Opts: &headgate.AckOpts{Error: "again"}},
					{Lease: leases["c"], Outcome: headgate.OutcomeHandBack},
				})
				return err
			},
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				want := map[string]headgate.State{"a": headgate.StateCompleted, "b": headgate.StateRetryable, "c": headgate.StateAvailable}
				for id, st := range want {
					if "job:"+id != corrupted {
						wantState(t, ctx, s, id, st)
					}
				}
			},
			mustPark: func(corrupted, field string) bool {
				read := map[string][]string{
					"job:a": {"fence", "ret", "uwin", "attempt", "crash", "charge"},
					"job:b": {"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence", "errb"},
					"job:c": {"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence"},
				}
				return field == "" || slices.Contains(read[corrupted], field)
			},
		})
	}},
}

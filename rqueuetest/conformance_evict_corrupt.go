package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// evictCorruptCases corrupt each key an eviction reads: the call fails with nothing
// written, or parks the corrupt job and evicts the others.
var evictCorruptCases = []conformanceCase{
	{"Evict/Corrupt", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, b, c := job("a"), job("b"), job("c")
				a.UniqueKey, a.UniqueWindow = "ua", time.Minute
				mustEnqueue(t, ctx, s, a, b, c)
				for _, cl := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
					mustAck(t, ctx, s, cl, headgate.OutcomeSuccess, &headgate.AckOpts{Logs: []string{"done"}})
				}
				advance(t, ctx, s, time.Hour)
			},
			keys: keysNamed("job:", "retained", "throttle", "q:default:counts"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.EvictRetained(ctx, 10)
				return err
			},
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				for _, id := range []string{"a", "b", "c"} {
					if "job:"+id != corrupted {
						wantState(t, ctx, s, id, headgate.StateDeleted)
					}
				}
			},
			mustPark: func(corrupted, field string) bool { return field == "" || slices.Contains([]string{"ret"}, field) },
		})
	}},
}

package rqueuetest

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// releasePendingCases cover ReleasePending (lua/release_pending.lua): staged jobs go on to
// scheduled or available; the ids that were not pending come back.
var releasePendingCases = []conformanceCase{
	{"Corrupt/ReleasePending", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, b, c := job("a"), job("b"), job("c")
				a.Pending, b.Pending, c.Pending = true, true, true
				b.ScheduledAt = epoch.Add(time.Hour)
				c.PartitionKey = "t1"
				d, later := job("d"), job("later")
				d.PartitionKey = "t1"
				later.ScheduledAt = epoch.Add(time.Hour)
				mustEnqueue(t, ctx, s, a, b, c, d, later)
			},
			keys: keysNamed("job:a", "job:b", "job:c", "scheduled", "q:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ReleasePending(ctx, "a", "b", "c")
				return err
			},
			mustPark: parksOn(loadJobNumbers...),
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				want := map[string]headgate.State{"a": headgate.StateAvailable, "b": headgate.StateScheduled, "c": headgate.StateAvailable}
				for id, st := range want {
					if "job:"+id != corrupted {
						wantState(t, ctx, s, id, st)
					}
				}
			},
		})
	}},
}

package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// releasePendingCases cover ReleasePending (lua/release_pending.lua): staged jobs go on to
// scheduled or available; the ids that were not pending come back.
var releasePendingCases = []conformanceCase{
	{"ReleasePending/ScheduledOrAvailable", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		now, later := job("now"), job("later")
		now.Pending, later.Pending = true, true
		later.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, now, later, job("plain"))
		wantState(t, ctx, s, "now", headgate.StatePending)
		wantState(t, ctx, s, "later", headgate.StatePending)
		// The ids that were not pending come back, in the order given; they are left as
		// they were.
		left, err := s.ReleasePending(ctx, "plain", "now", "gone", "later")
		if err != nil || !slices.Equal(left, []string{"plain", "gone"}) {
			t.Errorf("release: left %v, %v; want [plain gone]", left, err)
		}
		wantState(t, ctx, s, "now", headgate.StateAvailable)
		wantState(t, ctx, s, "plain", headgate.StateAvailable)
		if j := getJob(t, ctx, s, "later"); j.State != headgate.StateScheduled || !j.ScheduledAt.Equal(epoch.Add(time.Hour)) {
			t.Errorf("later: %s at %v, want scheduled at %v", j.State, j.ScheduledAt, epoch.Add(time.Hour))
		}
		// A second release finds nothing pending and writes nothing.
		writesNothing(t, ctx, s, "a release of jobs no longer pending", func() {
			if left, err := s.ReleasePending(ctx, "now", "later"); err != nil || !slices.Equal(left, []string{"now", "later"}) {
				t.Errorf("second release: left %v, %v; want [now later]", left, err)
			}
		})
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); len(got) != 2 || !slices.Contains(got, "now") || !slices.Contains(got, "plain") {
			t.Errorf("admitted %v, want now and plain", got)
		}
	}},
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

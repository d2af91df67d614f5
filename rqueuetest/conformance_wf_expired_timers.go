package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfExpiredTimersCases cover ExpiredTimers (lua/wf_expired_timers.lua): the armed timers
// due at a time, in order.
var wfExpiredTimersCases = []conformanceCase{
	// seed: expired_timers_include_boundary_and_exclude_future
	{"WfTimer/ExpiredBoundary", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustSchedule(t, ctx, s, "wf-1", "timer-3", at(30), 1)
		mustSchedule(t, ctx, s, "wf-1", "timer-2", at(20), 2)
		mustSchedule(t, ctx, s, "wf-1", "timer-1", at(10), 3)
		want := []headgate.TimerEntry{{WorkflowID: "wf-1", TimerID: "timer-1", FireAt: at(10), ArmedSeq: 3},
			{WorkflowID: "wf-1", TimerID: "timer-2", FireAt: at(20), ArmedSeq: 2}}
		if got := mustExpired(t, ctx, s, at(20), 100); !sameTimers(got, want) {
			t.Errorf("expired at 20: %+v, want %+v", got, want)
		}
		// Millisecond-exact: one ms before the boundary leaves it out.
		if got := mustExpired(t, ctx, s, at(20).Add(-time.Millisecond), 100); len(got) != 1 {
			t.Errorf("expired 1ms before 20: %+v, want only timer-1", got)
		}
		// Zero asOf is the store clock's now.
		advance(t, ctx, s, 20*time.Second)
		if got := mustExpired(t, ctx, s, time.Time{}, 100); !sameTimers(got, want) {
			t.Errorf("expired now (epoch+20s): %+v, want %+v", got, want)
		}
	}},
	{"WfTimer/EqualFireTimesOrdered", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		// Armed in scrambled order, all at one instant.
		for _, p := range [][2]string{{"wf-b", "t-2"}, {"wf-a", "t-9"}, {"wf-b", "t-1"}, {"wf-a", "t-10"}, {"wf-a:x", "t-1"}, {"wf", "t-1"}} {
			mustSchedule(t, ctx, s, p[0], p[1], at(5), 1)
		}
		mustSchedule(t, ctx, s, "wf-z", "t-0", at(4), 1)
		var got []string
		for _, e := range mustExpired(t, ctx, s, at(5), 100) {
			got = append(got, e.WorkflowID+"/"+e.TimerID)
		}
		want := []string{"wf-z/t-0", "wf/t-1", "wf-a/t-10", "wf-a/t-9", "wf-a:x/t-1", "wf-b/t-1", "wf-b/t-2"}
		if !slices.Equal(got, want) {
			t.Errorf("expired order %q, want %q (fire time, workflow id, timer id)", got, want)
		}
		if got := mustExpired(t, ctx, s, at(5), 3); len(got) != 3 || got[2].TimerID != "t-10" {
			t.Errorf("limit 3: %+v", got)
		}
	}},
}

func mustExpired(t testing.TB, ctx context.Context, s *headgate.Store, asOf time.Time, limit int) []headgate.TimerEntry {
	t.Helper()
	got, err := s.ExpiredTimers(ctx, asOf, limit)
	if err != nil {
		t.Fatalf("expired timers: %v", err)
	}
	return got
}

func sameTimers(a, b []headgate.TimerEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].WorkflowID != b[i].WorkflowID || a[i].TimerID != b[i].TimerID || !a[i].FireAt.Equal(b[i].FireAt) ||
			a[i].ArmedSeq != b[i].ArmedSeq {
			return false
		}
	}
	return true
}

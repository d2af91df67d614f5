package rqueuetest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

func mustSchedule(t testing.TB, ctx context.Context, s *headgate.Store, wf, timer string, fireAt time.Time, armed int64) {
	t.Helper()
	if err := s.ScheduleTimer(ctx, wf, timer, fireAt, armed); err != nil {
		t.Fatalf("schedule timer %s/%s: %v", wf, timer, err)
	}
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

// wfTimerCases cover ScheduleTimer, RetireTimer and ExpiredTimers.
var wfTimerCases = []conformanceCase{
	// seed: rescheduling_same_timer_replaces_prior_fire_at
	{"WfTimer/RescheduleReplaces", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustSchedule(t, ctx, s, "wf-1", "timer-1", at(10), 1)
		mustSchedule(t, ctx, s, "wf-1", "timer-1", at(30), 2)
		if got := mustExpired(t, ctx, s, at(10), 100); len(got) != 0 {
			t.Errorf("expired at the replaced time: %+v", got)
		}
		want := []headgate.TimerEntry{{WorkflowID: "wf-1", TimerID: "timer-1", FireAt: at(30), ArmedSeq: 2}}
		if got := mustExpired(t, ctx, s, at(30), 100); !sameTimers(got, want) {
			t.Errorf("expired at 30: %+v, want %+v", got, want)
		}
	}},
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
		if !equalStrings(got, want) {
			t.Errorf("expired order %q, want %q (fire time, workflow id, timer id)", got, want)
		}
		if got := mustExpired(t, ctx, s, at(5), 3); len(got) != 3 || got[2].TimerID != "t-10" {
			t.Errorf("limit 3: %+v", got)
		}
	}},
	{"WfTimer/RetireOnlySameArming", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustSchedule(t, ctx, s, "wf-1", "t", at(10), 1)
		mustSchedule(t, ctx, s, "wf-1", "t", at(10), 2) // same instant, newer arming
		for _, c := range []struct {
			fireAt time.Time
			armed  int64
		}{{at(10), 1}, {at(20), 2}} {
			before := snapshot(t, ctx, s)
			r, err := s.RetireTimer(ctx, "wf-1", "t", c.fireAt, c.armed)
			if err != nil || r != headgate.TimerSuperseded {
				t.Errorf("retire (%v, %d): %s %v, want superseded", c.fireAt, c.armed, r, err)
			}
			if after := snapshot(t, ctx, s); after != before {
				t.Errorf("a superseded retire changed the store")
			}
		}
		if r, err := s.RetireTimer(ctx, "wf-1", "t", at(10), 2); err != nil || r != headgate.TimerRetired {
			t.Errorf("retire the arming: %s %v", r, err)
		}
		if got := mustExpired(t, ctx, s, at(100), 100); len(got) != 0 {
			t.Errorf("retired timer still expires: %+v", got)
		}
		if r, err := s.RetireTimer(ctx, "wf-1", "t", at(10), 2); err != nil || r != headgate.TimerRetired {
			t.Errorf("retire an absent timer: %s %v, want retired", r, err)
		}
		if err := s.ScheduleTimer(ctx, "wf-1", "", at(1), 1); err == nil {
			t.Errorf("a timer without an id was scheduled")
		}
	}},
	{"WfTimer/RetireRacingRearm", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for round := range 20 {
			timer := wfID(round)
			mustSchedule(t, ctx, s, "wf-1", timer, at(10), 1)
			var wg sync.WaitGroup
			var retired headgate.TimerRetirement
			var retireErr, armErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				retired, retireErr = s.RetireTimer(ctx, "wf-1", timer, at(10), 1)
			}()
			go func() { defer wg.Done(); armErr = s.ScheduleTimer(ctx, "wf-1", timer, at(10), 2) }()
			wg.Wait()
			if retireErr != nil || armErr != nil {
				t.Fatalf("round %d: retire %v, re-arm %v", round, retireErr, armErr)
			}
			// Whichever ran first, the re-arming survives: the retire removed the old arming
			// (retired) or found the new one (superseded).
			var found *headgate.TimerEntry
			for _, e := range mustExpired(t, ctx, s, at(10), 1000) {
				if e.TimerID == timer {
					found = &e
				}
			}
			if found == nil || found.ArmedSeq != 2 {
				t.Errorf("round %d: retire (%s) racing a re-arm left %+v, want the re-arming (seq 2)", round, retired, found)
			}
		}
	}},
	// A timer armed sooner than every other is announced, so the timers duty wakes.
	{"WfTimer/SoonestAnnounced", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		ps := s.Client().Subscribe(ctx, s.TimersArmedChannel())
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		mustSchedule(t, ctx, s, "wf-1", "timer-1", at(30), 1) // the first: announced
		mustSchedule(t, ctx, s, "wf-1", "timer-2", at(50), 2) // later than timer-1: not
		mustSchedule(t, ctx, s, "wf-2", "timer-1", at(20), 1) // the soonest: announced
		var got []string
		for range 2 {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.Payload)
		}
		want := []string{strconv.FormatInt(at(30).UnixMilli(), 10), strconv.FormatInt(at(20).UnixMilli(), 10)}
		if !slices.Equal(got, want) {
			t.Errorf("announced %v, want %v (timer-2 fires after timer-1: not announced)", got, want)
		}
	}},
}

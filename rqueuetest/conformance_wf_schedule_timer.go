package rqueuetest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfScheduleTimerCases cover ScheduleTimer (lua/wf_schedule_timer.lua): arming a durable
// timer, and announcing the soonest.
var wfScheduleTimerCases = []conformanceCase{
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

func mustSchedule(t testing.TB, ctx context.Context, s *headgate.Store, wf, timer string, fireAt time.Time, armed int64) {
	t.Helper()
	if err := s.ScheduleTimer(ctx, wf, timer, fireAt, armed); err != nil {
		t.Fatalf("schedule timer %s/%s: %v", wf, timer, err)
	}
}

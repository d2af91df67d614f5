package rqueuetest

import (
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfRetireTimerCases cover RetireTimer (lua/wf_retire_timer.lua): only the arming named is
// removed; a newer one stays.
var wfRetireTimerCases = []conformanceCase{
	{"WfTimer/RetireOnlySameArming", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustSchedule(t, ctx, s, "wf-1", "t", at(10), 1)
		mustSchedule(t, ctx, s, "wf-1", "t", at(10), 2) // same instant, newer arming
		for _, c := range []struct {
			fireAt time.Time
			armed  int64
		}{{at(10), 1}, {at(20), 2}} {
			writesNothing(t, ctx, s, "a superseded retire", func() {
				r, err := s.RetireTimer(ctx, "wf-1", "t", c.fireAt, c.armed)
				if err != nil || r != headgate.TimerSuperseded {
					t.Errorf("retire (%v, %d): %s %v, want superseded", c.fireAt, c.armed, r, err)
				}
			})
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
}

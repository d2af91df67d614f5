package rqueuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// pauseScheduleCases cover PauseSchedule and ResumeSchedule.
var pauseScheduleCases = []conformanceCase{
	{"PauseSchedule/PausedFiresNothingAndResumeSkipsThePause", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		sc := minuteSchedule("report")
		sc.Misfire = headgate.Misfire{Policy: headgate.MisfireCatchUp, Max: 100, Window: time.Hour}
		mustAddSchedule(t, ctx, s, sc)
		f := cronFence(t, ctx, s, "a")
		advance(t, ctx, s, time.Minute)
		stale, err := s.PlanSchedule(ctx, "report")
		if err != nil {
			t.Fatal(err)
		}
		if changed, err := s.PauseSchedule(ctx, "report"); err != nil || !changed {
			t.Fatalf("pause: %t, %v", changed, err)
		}
		if changed, err := s.PauseSchedule(ctx, "report"); err != nil || changed {
			t.Errorf("second pause: %t, %v; want no change", changed, err)
		}
		var moved *headgate.ScheduleMovedError
		if _, err := s.FirePlan(ctx, f, stale); !errors.As(err, &moved) || !moved.Paused {
			t.Errorf("fire of a plan made before the pause: %v, want *ScheduleMovedError (paused)", err)
		}
		advance(t, ctx, s, 5*time.Minute)
		if res := mustFireDue(t, ctx, s, f); len(res) != 0 {
			t.Errorf("a paused schedule fired %v", res)
		}
		if changed, err := s.ResumeSchedule(ctx, "report"); err != nil || !changed {
			t.Fatalf("resume: %t, %v", changed, err)
		}
		resumedAt := epoch.Add(6 * time.Minute)
		if st := mustGetSchedule(t, ctx, s, "report"); !st.Mark.Equal(resumedAt) || st.Paused || !st.NextDue.Equal(resumedAt) {
			t.Errorf("resumed: mark %s next due %s paused %t; want the mark at %s", st.Mark, st.NextDue, st.Paused, resumedAt)
		}
		if changed, err := s.ResumeSchedule(ctx, "report"); err != nil || changed {
			t.Errorf("second resume: %t, %v; want no change", changed, err)
		}
		if res := mustFireDue(t, ctx, s, f); len(res) != 0 {
			t.Errorf("the ticks of the pause fired on resume (catch up does not apply to a pause): %v", res)
		}
		advance(t, ctx, s, time.Minute)
		res := mustFireDue(t, ctx, s, f)
		if len(res) != 1 || !res[0].Tick.Equal(time.Date(2023, 11, 14, 22, 20, 0, 0, time.UTC)) {
			t.Errorf("after resume fired %v, want the one tick at 22:20", res)
		}
		if _, err := s.PauseSchedule(ctx, "nope"); !errors.Is(err, headgate.ErrScheduleNotFound) {
			t.Errorf("pause of an unknown schedule: %v", err)
		}
	}},
}

package rqueuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// runScheduleCases cover RunScheduleNow.
var runScheduleCases = []conformanceCase{
	{"RunSchedule/RunsNowEvenPausedAndLeavesTheMark", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("report"))
		if _, err := s.PauseSchedule(ctx, "report"); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, 90*time.Second)
		r, err := s.RunScheduleNow(ctx, "report")
		if err != nil || r.ID != "cron:report:run:1700000090000" || r.Replayed {
			t.Fatalf("run now: %+v, %v", r, err)
		}
		if j := getJob(t, ctx, s, r.ID); j.Kind != "test:cron" || j.State != headgate.StateAvailable || string(j.Payload) != `{"report":1}` {
			t.Errorf("run-now job: %+v", j)
		}
		if r, err := s.RunScheduleNow(ctx, "report"); err != nil || !r.Replayed {
			t.Errorf("second run in the same ms: %+v, %v; want a replay", r, err)
		}
		st := mustGetSchedule(t, ctx, s, "report")
		if st.Runs != 1 || st.Fired != 0 || !st.Mark.Equal(epoch) || !st.Paused {
			t.Errorf("after run-now: runs %d fired %d mark %s paused %t", st.Runs, st.Fired, st.Mark, st.Paused)
		}
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 1); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, time.Millisecond)
		_, err = s.RunScheduleNow(ctx, "report")
		var bp *headgate.BackpressureError
		if !errors.As(err, &bp) || bp.Limit != 1 || bp.Current != 1 {
			t.Errorf("run-now at the limit: %v, want *BackpressureError", err)
		}
		if _, err := s.RunScheduleNow(ctx, "nope"); !errors.Is(err, headgate.ErrScheduleNotFound) {
			t.Errorf("run-now of an unknown schedule: %v", err)
		}
	}},
}

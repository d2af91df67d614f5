package rqueuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// removeScheduleCases cover RemoveSchedule.
var removeScheduleCases = []conformanceCase{
	{"RemoveSchedule/RemovesTheScheduleNotItsJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAddSchedule(t, ctx, s, minuteSchedule("report"))
		f := cronFence(t, ctx, s, "a")
		advance(t, ctx, s, time.Minute)
		res := mustFire(t, ctx, s, f, "report")
		if err := s.RemoveSchedule(ctx, "report"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSchedule(ctx, "report"); !errors.Is(err, headgate.ErrScheduleNotFound) {
			t.Errorf("get after remove: %v", err)
		}
		if page, _, err := s.ListSchedules(ctx, "", 10); err != nil || len(page) != 0 {
			t.Errorf("list after remove: %d, %v", len(page), err)
		}
		wantState(t, ctx, s, res[0].JobID, headgate.StateAvailable)
		advance(t, ctx, s, time.Minute)
		if res := mustFireDue(t, ctx, s, f); len(res) != 0 {
			t.Errorf("a removed schedule fired %v", res)
		}
		if err := s.RemoveSchedule(ctx, "report"); !errors.Is(err, headgate.ErrScheduleNotFound) {
			t.Errorf("second remove: %v", err)
		}
	}},
}

package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// promoteCases cover the Promote transition of the job contract.
var promoteCases = []conformanceCase{
	{"Promote/DueOnlyAndNextDue", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.ScheduledAt, b.ScheduledAt = epoch.Add(time.Second), epoch.Add(time.Minute)
		mustEnqueue(t, ctx, s, a, b)
		n, next, err := s.PromoteDue(ctx, 10)
		if err != nil || n != 0 || !next.Equal(a.ScheduledAt) {
			t.Errorf("promote before due: %d next %v, %v", n, next, err)
		}
		advance(t, ctx, s, time.Second)
		n, next, err = s.PromoteDue(ctx, 10)
		if err != nil || n != 1 || !next.Equal(b.ScheduledAt) {
			t.Errorf("promote at due: %d next %v, %v", n, next, err)
		}
		wantState(t, ctx, s, "a", headgate.StateAvailable)
		wantState(t, ctx, s, "b", headgate.StateScheduled)
	}},
}

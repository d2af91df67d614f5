package rqueuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// cancelCases cover the Cancel transition of the job contract.
var cancelCases = []conformanceCase{
	{"Cancel/UnfinishedOnlyHolderRejected", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later := job("scheduled")
		later.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, job("running"), job("available"), later)
		c := admitOne(t, ctx, s)
		for _, id := range []string{"running", "available", "scheduled"} {
			if err := s.Cancel(ctx, id); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
			wantState(t, ctx, s, id, headgate.StateCancelled)
		}
		if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); err == nil {
			t.Errorf("the cancelled job's holder acked")
		}
		err := unchanged(t, ctx, s, "cancel terminal", func() error { return s.Cancel(ctx, "running") })
		wantErr[*headgate.NotCancellableError](t, err)
		if err := s.Cancel(ctx, "nope"); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("cancel unknown: %v", err)
		}
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
			t.Errorf("admitted cancelled jobs %v", ids(got))
		}
		advance(t, ctx, s, 2*time.Hour)
		if n, _, _ := s.PromoteDue(ctx, 10); n != 0 {
			t.Errorf("promoted a cancelled job")
		}
	}},
}

package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// evictCases cover the Evict transition of the job contract.
var evictCases = []conformanceCase{
	{"Evict/TerminalStatesAfterRetention", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a-skip"), job("b-cancel"), job("c-keep"))
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 1)) {
			mustAck(t, ctx, s, c, headgate.OutcomeSkip, nil)
		}
		mustCancel(t, ctx, s, "b-cancel")
		// Archived and cancelled jobs are kept by the namespace policy, whatever the job's
		// retention (which is its success's).
		advance(t, ctx, s, headgate.RetentionFailedDefault)
		if n, err := s.EvictRetained(ctx, 1); err != nil || n != 1 {
			t.Errorf("evict with limit 1: %d (err %v)", n, err)
		}
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 1 {
			t.Errorf("evict the rest: %d (err %v)", n, err)
		}
		wantState(t, ctx, s, "c-keep", headgate.StateAvailable)
	}},
}

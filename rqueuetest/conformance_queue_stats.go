package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// statsCases cover the Stats transition of the job contract.
var statsCases = []conformanceCase{
	{"Stats/CountsUnfinished", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"), job("c"))
		c := admitOne(t, ctx, s)
		mustAck(t, ctx, s, c, headgate.OutcomeSkip, nil)
		admitOne(t, ctx, s)
		stats, err := s.QueueStats(ctx)
		if err != nil || len(stats) != 1 {
			t.Fatalf("stats: %+v, %v", stats, err)
		}
		st := stats[0]
		if st.Queue != "default" || st.Unfinished != 2 || st.Counts[headgate.StateArchived] != 1 ||
			st.Counts[headgate.StateRunning] != 1 || st.Counts[headgate.StateAvailable] != 1 || st.Limit != nil {
			t.Errorf("stats: %+v", st)
		}
	}},
}

package rqueuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// reclaimJitterCases cover the crash backoff's jitter: jobs that crashed together are
// not all due again at the same instant.
var reclaimJitterCases = []conformanceCase{
	{"Reclaim/CoCrashedJobsComeBackApart", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const n = 10
		var jobs []headgate.Envelope
		for i := range n {
			e := job(fmt.Sprintf("j%d", i))
			e.Fingerprint = fmt.Sprintf("fp%d", i)
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
		if got := mustAdmit(t, ctx, s, admitReq("w", n)); len(got) != n {
			t.Fatalf("admitted %d, want %d", len(got), n)
		}
		advance(t, ctx, s, time.Minute)
		if r, err := s.ReclaimExpired(ctx, n); err != nil || len(r) != n {
			t.Fatalf("reclaim: %d, %v", len(r), err)
		}
		now := epoch.Add(time.Minute)
		base := headgate.CrashRetryBaseDefault
		due := map[time.Time]bool{}
		for _, e := range jobs {
			j := getJob(t, ctx, s, e.ID)
			if d := j.ScheduledAt.Sub(now); j.State != headgate.StateRetryable || d < base/2 || d >= base*3/2 {
				t.Errorf("%s: %s in %v, want retryable in [%v, %v)", e.ID, j.State, d, base/2, base*3/2)
			}
			due[j.ScheduledAt] = true
		}
		if len(due) < n*8/10 {
			t.Errorf("%d jobs that crashed together are due at %d distinct instants, want at least %d", n, len(due), n*8/10)
		}
	}},
}

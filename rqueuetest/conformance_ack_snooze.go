package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// ackSnoozeCases cover snoozes: counted on the job and bounded by the namespace policy.
var ackSnoozeCases = []conformanceCase{
	{"Ack/SnoozesCountedAndBounded", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		p, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.SnoozeLimit != headgate.SnoozeLimitDefault {
			t.Errorf("default snooze limit %d, want %d", p.SnoozeLimit, headgate.SnoozeLimitDefault)
		}
		p.SnoozeLimit = 2
		if err := s.SetPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, ctx, s, job("a"))
		for i := 1; i <= 2; i++ {
			c := admitOne(t, ctx, s)
			if c.Envelope.Snoozes != i-1 {
				t.Errorf("claim %d carries %d snoozes, want %d", i, c.Envelope.Snoozes, i-1)
			}
			if st := mustAck(t, ctx, s, c, headgate.OutcomeSnooze, &headgate.AckOpts{Delay: time.Second}); st != headgate.StateScheduled {
				t.Errorf("snooze %d: %s, want scheduled", i, st)
			}
			if j := getJob(t, ctx, s, "a"); j.Snoozes != i || j.Attempt != 0 {
				t.Errorf("after snooze %d: snoozes %d attempt %d, want %d and 0", i, j.Snoozes, j.Attempt, i)
			}
			advance(t, ctx, s, time.Second)
			if _, _, err := s.PromoteDue(ctx, 10); err != nil {
				t.Fatal(err)
			}
		}
		// Past the limit a snooze is a failed attempt, retried with the backoff.
		c := admitOne(t, ctx, s)
		if st := mustAck(t, ctx, s, c, headgate.OutcomeSnooze, &headgate.AckOpts{Delay: time.Hour}); st != headgate.StateRetryable {
			t.Errorf("snooze past the limit: %s, want retryable", st)
		}
		now := epoch.Add(2 * time.Second)
		j := getJob(t, ctx, s, "a")
		if j.Snoozes != 3 || j.Attempt != 1 || !j.ScheduledAt.Equal(now.Add(headgate.RetryBaseDefault)) {
			t.Errorf("after the third snooze: snoozes %d attempt %d at %v, want 3, 1 at %v", j.Snoozes, j.Attempt, j.ScheduledAt, now.Add(headgate.RetryBaseDefault))
		}
		want := []string{"snooze -> retryable (attempt 1, fence 3, lease " + c.LeaseID + "): snoozed more than 2 times"}
		if h := historyOf(t, ctx, s, "a"); !slices.Equal(h, want) {
			t.Errorf("history %q, want %q", h, want)
		}
	}},
}

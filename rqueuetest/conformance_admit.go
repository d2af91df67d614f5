package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// admitCases cover the Admit transition of the job contract.
var admitCases = []conformanceCase{
	{"Admit/PriorityThenTimeThenID", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mk := func(id string, prio int32, at time.Duration) headgate.Envelope {
			e := job(id)
			e.Priority, e.ScheduledAt = prio, epoch.Add(-at)
			return e
		}
		mustEnqueue(t, ctx, s, mk("c", 0, time.Second), mk("b", 0, time.Second), mk("late", 0, 0),
			mk("high", 5, 0), mk("low", -5, time.Hour), mk("early", 0, time.Minute))
		claims := mustAdmit(t, ctx, s, admitReq("w", 10))
		want := []string{"high", "early", "b", "c", "late", "low"}
		if got := ids(claims); !slices.Equal(got, want) {
			t.Errorf("admission order %v, want %v", got, want)
		}
	}},
	{"Admit/FenceLeaseAndRunning", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		if c.Fence != 1 || c.LeaseID != "w1-lease" || !c.ExpiresAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("claim: fence %d lease %q expires %v", c.Fence, c.LeaseID, c.ExpiresAt)
		}
		wantState(t, ctx, s, "a", headgate.StateRunning)
		mustAck(t, ctx, s, c, headgate.OutcomeRateLimited, nil)
		c2 := admitOne(t, ctx, s)
		if c2.Fence != 2 {
			t.Errorf("second admission fence %d, want 2", c2.Fence)
		}
		if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSuccess, nil); err == nil {
			t.Errorf("ack with the first admission's fence succeeded")
		}
	}},
	{"Admit/QueuesInOrderCapacityAcrossQueues", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		var jobs []headgate.Envelope
		for _, q := range []string{"q1", "q2", "q3"} {
			for i := range 2 {
				e := job(q + "-" + string(rune('a'+i)))
				e.Queue = q
				jobs = append(jobs, e)
			}
		}
		mustEnqueue(t, ctx, s, jobs...)
		claims := mustAdmit(t, ctx, s, admitReq("w", 3, "q3", "q1", "q2"))
		if got, want := ids(claims), []string{"q3-a", "q3-b", "q1-a"}; !slices.Equal(got, want) {
			t.Errorf("admitted %v, want %v", got, want)
		}
	}},
	{"Admit/PausedQueueSkipped", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.Queue, b.Queue = "paused", "open"
		mustEnqueue(t, ctx, s, a, b)
		if err := s.PauseQueue(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5, "paused", "open"))); !slices.Equal(got, []string{"b"}) {
			t.Errorf("admitted %v with queue paused, want [b]", got)
		}
		if err := s.ResumeQueue(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5, "paused", "open"))); !slices.Equal(got, []string{"a"}) {
			t.Errorf("admitted %v after resume, want [a]", got)
		}
	}},
	{"Admit/NotBeforeDueNorPending", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later, staged := job("later"), job("staged")
		later.ScheduledAt = epoch.Add(time.Second)
		staged.Pending = true
		mustEnqueue(t, ctx, s, later, staged)
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
			t.Errorf("admitted %v before due / while pending", ids(got))
		}
		advance(t, ctx, s, time.Second)
		if n, _, err := s.PromoteDue(ctx, 10); err != nil || n != 1 {
			t.Errorf("promote: %d, %v; want 1", n, err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"later"}) {
			t.Errorf("admitted %v, want [later]; pending jobs wait for release", got)
		}
		left, err := s.ReleasePending(ctx, "staged", "later")
		if err != nil || !slices.Equal(left, []string{"later"}) {
			t.Errorf("release pending: left %v, %v; want [later]", left, err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"staged"}) {
			t.Errorf("admitted %v after release, want [staged]", got)
		}
	}},
}

package rqueuetest

import (
	"context"
	"slices"
	"strconv"
	"strings"
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
		ctx, c := heldJob(t, s)
		if c.Fence != 1 || !strings.HasPrefix(c.LeaseID, "w1-lease-") || !c.ExpiresAt.Equal(epoch.Add(time.Minute)) {
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
		wantAdmitted(t, ctx, s, admitReq("w", 5, "paused", "open"), []string{"b"}, " with queue paused")
		if err := s.ResumeQueue(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		wantAdmitted(t, ctx, s, admitReq("w", 5, "paused", "open"), []string{"a"}, " after resume")
	}},
	{"Admit/NotBeforeDueNorPending", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later, staged := job("later"), job("staged")
		later.ScheduledAt = epoch.Add(time.Second)
		staged.Pending = true
		mustEnqueue(t, ctx, s, later, staged)
		wantAdmitted(t, ctx, s, admitReq("w", 5), nil, " before due / while pending")
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
		wantAdmitted(t, ctx, s, admitReq("w", 5), []string{"staged"}, " after release")
	}},
	{"Admit/PauseResumeWithPinnedWork", pauseResumePinned},
	// A call Redis applied whose reply was lost is sent again by the client (go-redis
	// retries a command when the connection breaks after it was written). The repeat must
	// report what the first call did, and do nothing of its own: here an admission under
	// the same lease id; Ack/RepeatSameFence and Renew/KeepsTheAdmissionRecord do the same
	// for the other calls of a holder.
	{"Admit/RepeatSameLease", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"), job("c"))
		req := admitReq("w1", 2)
		first, err := s.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !sameClaims(first, again) || len(first) != 2 {
			t.Errorf("repeat admitted %v, want the first call's %v", claimSummary(again), claimSummary(first))
		}
		wantState(t, ctx, s, "c", headgate.StateAvailable)

		// One of the first jobs is acked: a repeat returns the other, still leased.
		mustAck(t, ctx, s, first[0], headgate.OutcomeSuccess, nil)
		advance(t, ctx, s, 30*time.Second)
		again, err = s.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !sameClaims(first[1:], again) {
			t.Errorf("repeat after an ack admitted %v, want %v", claimSummary(again), claimSummary(first[1:]))
		}
		// Past the leases' expiry a repeat returns nothing, and still leases no other job.
		advance(t, ctx, s, 30*time.Second)
		if again, err = s.Admit(ctx, req); err != nil || len(again) != 0 {
			t.Errorf("repeat after the leases expired: %v, %v; want nothing", claimSummary(again), err)
		}
		wantState(t, ctx, s, "c", headgate.StateAvailable)
		// The job still running is a lost lease like any other.
		if n, err := s.ReclaimExpired(ctx, 10); err != nil || len(n) != 1 {
			t.Errorf("reclaimed %d, %v; want 1", len(n), err)
		}
		if again, err = s.Admit(ctx, req); err != nil || len(again) != 0 {
			t.Errorf("repeat after the reclaim: %v, %v; want nothing", claimSummary(again), err)
		}
		if j := getJob(t, ctx, s, first[1].Envelope.ID); j.CrashAttempt != 1 {
			t.Errorf("the lost lease's job: crash attempt %d, want 1", j.CrashAttempt)
		}
		// A new lease id is a new admission.
		if got := ids(mustAdmit(t, ctx, s, admitReq("w1", 3))); !slices.Equal(got, []string{"c"}) {
			t.Errorf("next admission %v, want [c]", got)
		}
	}},
	{"Admit/RepeatOfEmptyAdmission", func(t *testing.T, s *headgate.Store) {
		// An admission that leased nothing has nothing to repeat: the same lease id
		// admits what came since.
		ctx := freeze(t, s)
		req := admitReq("w1", 1)
		if c := mustAdmitAs(t, ctx, s, req); len(c) != 0 {
			t.Fatalf("admitted %v from an empty queue", claimSummary(c))
		}
		mustEnqueue(t, ctx, s, job("a"))
		if got := ids(mustAdmitAs(t, ctx, s, req)); !slices.Equal(got, []string{"a"}) {
			t.Errorf("admitted %v, want [a]", got)
		}
	}},
}

// wantAdmitted admits with req and checks the ids admitted, in order (none when want is
// empty); when says, in a failure, what the call came after.
func wantAdmitted(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.AdmitRequest, want []string, when string) {
	t.Helper()
	got := ids(mustAdmit(t, ctx, s, req))
	switch {
	case len(want) == 0 && len(got) != 0:
		t.Errorf("admitted %v%s", got, when)
	case !slices.Equal(got, want):
		t.Errorf("admitted %v%s, want %v", got, when, want)
	}
}

func admitQ(worker string, capacity, quantum int, queues ...string) headgate.AdmitRequest {
	r := admitReq(worker, capacity, queues...)
	r.Quantum = quantum
	return r
}

func ackAllSuccess(t *testing.T, ctx context.Context, s *headgate.Store, claims []headgate.Claim) {
	t.Helper()
	if len(claims) == 0 {
		return
	}
	acks := make([]headgate.AckRequest, len(claims))
	for i, c := range claims {
		acks[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess}
	}
	res, err := s.AckMany(ctx, acks)
	if err != nil {
		t.Fatalf("ack many: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("ack %s: %v", claims[i].Envelope.ID, r.Err)
		}
	}
}

func enqueueChunks(t *testing.T, ctx context.Context, s *headgate.Store, jobs []headgate.Envelope, size int) {
	t.Helper()
	for chunk := range slices.Chunk(jobs, size) {
		mustEnqueue(t, ctx, s, chunk...)
	}
}

// pauseResumePinned: a paused queue holds back work pinned to the caller as well as
// shared work, other queues are still served, and resuming gives each worker its own.
func pauseResumePinned(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.PauseQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	pinned, free, other := job("pinned"), job("free"), job("pinned-other")
	pinned.Queue, pinned.StickyWorker = "q", "w1"
	free.Queue = "q"
	other.Queue, other.StickyWorker = "other", "w1"
	mustEnqueue(t, ctx, s, pinned, free, other) // enqueues succeed while paused
	if got := ids(mustAdmit(t, ctx, s, admitReq("w1", 10, "q", "other"))); !slices.Equal(got, []string{"pinned-other"}) {
		t.Errorf("w1 admitted %v with q paused, want [pinned-other]", got)
	}
	if got := mustAdmit(t, ctx, s, admitReq("w2", 10, "q")); len(got) != 0 {
		t.Errorf("w2 admitted %v from a paused queue", ids(got))
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Queue == "q" && (!st.Paused || st.Counts[headgate.StateAvailable] != 2) {
			t.Errorf("stats of paused q: %+v", st)
		}
	}
	if err := s.ResumeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w2", 10, "q"))); !slices.Equal(got, []string{"free"}) {
		t.Errorf("w2 admitted %v after resume, want [free] (not w1's pinned job)", got)
	}
	claims := mustAdmit(t, ctx, s, admitReq("w1", 10, "q"))
	if got := ids(claims); !slices.Equal(got, []string{"pinned"}) {
		t.Fatalf("w1 admitted %v after resume, want [pinned]", got)
	}
	// Pinned work requeued while the queue is paused again waits for the resume.
	if err := s.PauseQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	mustAck(t, ctx, s, claims[0], headgate.OutcomeRateLimited, nil)
	if got := mustAdmit(t, ctx, s, admitReq("w1", 10, "q")); len(got) != 0 {
		t.Errorf("w1 admitted %v from a paused queue", ids(got))
	}
	if err := s.ResumeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w1", 10, "q"))); !slices.Equal(got, []string{"pinned"}) {
		t.Errorf("w1 admitted %v after the second resume, want [pinned]", got)
	}
}

// mustAdmitAs admits with req as it is, lease id included (mustAdmit makes a new one).
func mustAdmitAs(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.AdmitRequest) []headgate.Claim {
	t.Helper()
	claims, err := s.Admit(ctx, req)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return claims
}

// sameClaims reports whether two admissions returned the same leases: ids, lease ids,
// fences and expiries, in the same order.
func sameClaims(a, b []headgate.Claim) bool {
	return slices.EqualFunc(a, b, func(x, y headgate.Claim) bool {
		return x.Envelope.ID == y.Envelope.ID && x.LeaseID == y.LeaseID && x.Fence == y.Fence && x.ExpiresAt.Equal(y.ExpiresAt)
	})
}

func claimSummary(claims []headgate.Claim) []string {
	out := make([]string, len(claims))
	for i, c := range claims {
		out[i] = c.Envelope.ID + "@" + c.LeaseID + "/" + strconv.FormatInt(c.Fence, 10)
	}
	return out
}

package rqueuetest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// repeatCases: a call Redis applied whose reply was lost is sent again by the client
// (go-redis retries a command when the connection breaks after it was written). The repeat
// must report what the first call did, and do nothing of its own.
var repeatCases = []conformanceCase{
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
	{"Renew/KeepsTheAdmissionRecord", func(t *testing.T, s *headgate.Store) {
		// The record that recognises a repeat lives as long as the leases it names: a
		// renewal extends it, so a deleting ack repeated after it is still known.
		ctx := freeze(t, s)
		zero := job("zero")
		zero.Retention = 0
		mustEnqueue(t, ctx, s, zero)
		req := admitReq("w1", 1)
		req.Lease = time.Second
		claims := mustAdmitAs(t, ctx, s, req)
		if len(claims) != 1 {
			t.Fatalf("admitted %v", claimSummary(claims))
		}
		record := nsKey(s, "admission:"+req.LeaseID)
		if ttl, err := s.Client().PTTL(ctx, record).Result(); err != nil || ttl <= 0 || ttl > time.Second {
			t.Fatalf("the admission record's TTL %s, %v; want at most the 1s lease", ttl, err)
		}
		if lost, err := s.Renew(ctx, []headgate.LeaseRef{claims[0].LeaseRef()}, time.Hour); err != nil || len(lost) != 0 {
			t.Fatalf("renew: lost %v, %v", lost, err)
		}
		if ttl, err := s.Client().PTTL(ctx, record).Result(); err != nil || ttl < 30*time.Minute {
			t.Errorf("after a renewal of an hour the record's TTL is %s, %v; want about an hour", ttl, err)
		}
		mustAck(t, ctx, s, claims[0], headgate.OutcomeSuccess, nil)
		if st, err := s.Ack(ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); err != nil {
			t.Errorf("repeated deleting ack after the renewal: %s, %v; want the first result", st, err)
		}
	}},
	{"Ack/RepeatSameFence", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		zero := job("zero")
		zero.Retention = 0
		retry := job("retry")
		retry.MaxAttempts = 3
		mustEnqueue(t, ctx, s, job("success"), zero, retry, job("skip"), job("revoke"), job("snooze"), job("back"))
		outcomes := map[string]headgate.Outcome{"success": headgate.OutcomeSuccess, "zero": headgate.OutcomeSuccess,
			"retry": headgate.OutcomeRetry, "skip": headgate.OutcomeSkip, "revoke": headgate.OutcomeRevoke,
			"snooze": headgate.OutcomeSnooze, "back": headgate.OutcomeHandBack}
		want := map[string]headgate.State{"success": headgate.StateCompleted, "zero": headgate.StateDeleted,
			"retry": headgate.StateRetryable, "skip": headgate.StateArchived, "revoke": headgate.StateDeleted,
			"snooze": headgate.StateScheduled, "back": headgate.StateAvailable}
		claims := mustAdmit(t, ctx, s, admitReq("w1", len(outcomes)))
		if len(claims) != len(outcomes) {
			t.Fatalf("admitted %d, want %d", len(claims), len(outcomes))
		}
		reqs := make([]headgate.AckRequest, len(claims))
		for i, c := range claims {
			reqs[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: outcomes[c.Envelope.ID],
				Opts: &headgate.AckOpts{Error: "e", Delay: time.Second}}
		}
		for round, name := range []string{"ack", "repeat", "second repeat"} {
			res, err := s.AckMany(ctx, reqs)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, r := range res {
				id := claims[i].Envelope.ID
				if r.Err != nil || r.State != want[id] {
					t.Errorf("%s of %s: %s, %v; want %s", name, id, r.State, r.Err, want[id])
				}
			}
			if round == 0 {
				continue
			}
			// The repeat changed nothing: no attempt or snooze counted twice, no history
			// entry added.
			if j := getJob(t, ctx, s, "retry"); j.Attempt != 1 {
				t.Errorf("%s: retry at attempt %d, want 1", name, j.Attempt)
			}
			if j := getJob(t, ctx, s, "snooze"); j.Snoozes != 1 {
				t.Errorf("%s: snoozes %d, want 1", name, j.Snoozes)
			}
			if h := historyOf(t, ctx, s, "retry"); len(h) != 1 {
				t.Errorf("%s: retry history %q, want one entry", name, h)
			}
		}
	}},
	{"Ack/RepeatIsNotAStranger", func(t *testing.T, s *headgate.Store) {
		// What a repeat is recognized by: the same fence, and an end this outcome leads
		// to. Anything else is still rejected.
		ctx := freeze(t, s)
		zero := job("z")
		zero.Retention = 0
		mustEnqueue(t, ctx, s, job("a"), job("b"), zero)
		claims := mustAdmit(t, ctx, s, admitReq("w1", 3))
		byID := map[string]headgate.Claim{}
		for _, c := range claims {
			byID[c.Envelope.ID] = c
		}
		a, b, z := byID["a"], byID["b"], byID["z"]
		mustAck(t, ctx, s, a, headgate.OutcomeSuccess, nil)
		mustAck(t, ctx, s, z, headgate.OutcomeSuccess, nil)
		if err := s.Cancel(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		for name, ack := range map[string]headgate.AckRequest{
			"another outcome":              {Lease: a.LeaseRef(), Outcome: headgate.OutcomeRetry},
			"an old fence":                 {Lease: headgate.LeaseRef{JobID: "a", LeaseID: a.LeaseID, Fence: a.Fence - 1}, Outcome: headgate.OutcomeSuccess},
			"a job cancelled":              {Lease: b.LeaseRef(), Outcome: headgate.OutcomeSuccess},
			"a deleted job, another lease": {Lease: headgate.LeaseRef{JobID: "z", LeaseID: "other", Fence: z.Fence}, Outcome: headgate.OutcomeSuccess},
			"a deleted job, not deleting":  {Lease: z.LeaseRef(), Outcome: headgate.OutcomeRetry},
		} {
			err := unchanged(t, ctx, s, name, func() error {
				_, err := s.Ack(ctx, ack.Lease, ack.Outcome, ack.Opts)
				return err
			})
			if !errors.As(err, new(*headgate.LeaseRejectedError)) {
				t.Errorf("ack of %s: %v, want *LeaseRejectedError", name, err)
			}
		}
	}},
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

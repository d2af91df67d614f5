package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// admitProbationCases: a job that has crashed before is admitted only on probation, so a
// poison job crashes alone; a fingerprint can be capped in flight; siblings held by a
// quarantined fingerprint are counted held, not available.
var admitProbationCases = []conformanceCase{
	{"Admit/Probation/PoisonCrashesAlone", probationPoisonAlone(true)},
	{"Admit/Probation/WithoutItInnocentsCrashWithPoison", probationPoisonAlone(false)},
	{"Admit/Probation/CrashedLookedPastNotBlocking", probationLookedPast},
	{"Admit/FingerprintCap/InFlightCapFromPolicy", fingerprintCap},
	{"Admit/Held/CountedHeldNotAvailable", heldCounted},
}

// kill expires every lease of the claims (their worker died) and reclaims them.
func kill(t testing.TB, ctx context.Context, s *headgate.Store, claims []headgate.Claim) {
	t.Helper()
	var last time.Time
	for _, c := range claims {
		if c.ExpiresAt.After(last) {
			last = c.ExpiresAt
		}
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := last.Sub(now) + time.Millisecond; d > 0 {
		advance(t, ctx, s, d)
	}
	r, err := s.ReclaimExpired(ctx, 100)
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if len(r) != len(claims) {
		t.Fatalf("reclaimed %d jobs, want %d", len(r), len(claims))
	}
}

// probationPoisonAlone: one poison job and nine innocents (different fingerprints) are
// admitted together by one worker process, which the poison kills. Every admission that
// includes the poison dies with it. With probation (at most one crashed job per call,
// the worker's 1 less the crashed jobs it runs) only the poison is quarantined and the
// nine finish; without it, all ten crash together up to the crash limit.
func probationPoisonAlone(probation bool) func(t *testing.T, s *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		var jobs []headgate.Envelope
		for i := range 10 {
			id := fmt.Sprint("innocent-", i)
			if i == 0 {
				id = "poison"
			}
			e := job(id)
			e.Fingerprint, e.PartitionKey = "fp-"+id, id
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
		claims := mustAdmit(t, ctx, s, admitReq("w", 10))
		if len(claims) != 10 {
			t.Fatalf("first admission: %v, want all 10 together", ids(claims))
		}
		kill(t, ctx, s, claims)
		for round := 1; round <= 40; round++ {
			advance(t, ctx, s, 10*time.Second) // past every crash backoff
			if _, _, err := s.PromoteDue(ctx, 100); err != nil {
				t.Fatal(err)
			}
			req := admitReq("w", 10)
			req.Probation, req.MaxCrashed = probation, 1 // a restarted worker runs no crashed job
			claims := mustAdmit(t, ctx, s, req)
			if len(claims) == 0 {
				break
			}
			if probation && len(claims) != 1 {
				t.Errorf("round %d: admitted %v on probation, want one crashed job", round, ids(claims))
			}
			if slices.ContainsFunc(claims, func(c headgate.Claim) bool { return c.Envelope.ID == "poison" }) {
				kill(t, ctx, s, claims)
			} else {
				ackAllSuccess(t, ctx, s, claims)
			}
		}
		var quarantined []string
		for _, e := range jobs {
			if stateOf(t, ctx, s, e.ID) == headgate.StateQuarantined {
				quarantined = append(quarantined, e.ID)
			}
		}
		if probation {
			if !slices.Equal(quarantined, []string{"poison"}) {
				t.Errorf("quarantined %v, want only the poison", quarantined)
			}
			for _, e := range jobs[1:] {
				wantState(t, ctx, s, e.ID, headgate.StateCompleted)
			}
		} else if len(quarantined) != 10 {
			// What probation prevents: the innocent die with the poison each time.
			t.Errorf("without probation: quarantined %v, want all 10", quarantined)
		}
	}
}

// probationLookedPast: with no probation slot a crashed job is looked past, in place:
// the fresh job behind it in its partition is admitted, and a call with a slot admits it.
func probationLookedPast(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	crashed := job("crashed")
	crashed.PartitionKey, crashed.Priority = "t", 9
	mustEnqueue(t, ctx, s, crashed)
	kill(t, ctx, s, []headgate.Claim{admitOne(t, ctx, s)})
	advance(t, ctx, s, 10*time.Second)
	if _, _, err := s.PromoteDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	fresh := job("fresh")
	fresh.PartitionKey = "t"
	mustEnqueue(t, ctx, s, fresh)
	req := admitReq("w", 10)
	req.Probation = true
	if got := ids(mustAdmit(t, ctx, s, req)); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("admitted %v with no probation slot, want [fresh] past the crashed job", got)
	}
	wantState(t, ctx, s, "crashed", headgate.StateAvailable)
	req.MaxCrashed = 1
	claims := mustAdmit(t, ctx, s, req)
	if got := ids(claims); !slices.Equal(got, []string{"crashed"}) {
		t.Errorf("admitted %v with one slot, want [crashed]", got)
	} else if claims[0].Envelope.CrashAttempt != 1 {
		t.Errorf("crash attempt %d, want 1", claims[0].Envelope.CrashAttempt)
	}
	if _, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
		Capacity: 1, Lease: time.Minute, Probation: true, MaxCrashed: -1}); err == nil {
		t.Errorf("MaxCrashed -1 accepted")
	}
}

// fingerprintCap: the namespace policy fp_inflight caps the running jobs of one
// fingerprint; the count goes down however a job leaves running (ack, cancel, reclaim).
func fingerprintCap(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	// The policy setter belongs to the operator API; the field is the contract.
	policy := nsKey(s, "policy")
	if err := s.Client().HSet(ctx, policy, "fp_inflight", 1).Err(); err != nil {
		t.Fatal(err)
	}
	var jobs []headgate.Envelope
	for i := 1; i <= 4; i++ {
		e := job(fmt.Sprint("f", i))
		e.Fingerprint = "same"
		jobs = append(jobs, e)
	}
	x := job("x")
	x.Fingerprint = "other"
	mustEnqueue(t, ctx, s, append(jobs, x)...)
	admit := func(want ...string) []headgate.Claim {
		t.Helper()
		claims := mustAdmit(t, ctx, s, admitReq("w", 10))
		if got := ids(claims); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("admitted %v, want %v", got, want)
		}
		return claims
	}
	first := admit("f1", "x")
	admit()
	ackAllSuccess(t, ctx, s, first) // ack releases
	admit("f2")
	if err := s.Cancel(ctx, "f2"); err != nil { // cancel releases
		t.Fatal(err)
	}
	third := admit("f3")
	kill(t, ctx, s, third) // reclaim releases
	advance(t, ctx, s, 10*time.Second)
	if _, _, err := s.PromoteDue(ctx, 10); err != nil {
		t.Fatal(err)
	}
	// f3 is due after its crash backoff, so f4 now ranks first.
	fourth := admit("f4")
	mustAck(t, ctx, s, fourth[0], headgate.OutcomeRateLimited, nil) // hand-back releases
	fifth := admit("f4")
	// Off again: f3 goes beside f4.
	if err := s.Client().HSet(ctx, policy, "fp_inflight", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ackAllSuccess(t, ctx, s, append(fifth, admit("f3")...))
	if n, err := s.Client().HLen(ctx, nsKey(s, "fprunning")).Result(); err != nil || n != 0 {
		t.Errorf("running counts left: %d (%v), want none", n, err)
	}
}

// heldCounted: siblings of a quarantined fingerprint, set aside when they become
// available or when admission meets them, are counted held, not available, and are
// unfinished; cancelling one and releasing the fingerprint keep the counts exact.
func heldCounted(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mk := func(id, queue string, at time.Time) headgate.Envelope {
		e := job(id)
		e.Fingerprint, e.Queue, e.ScheduledAt = "bad", queue, at
		return e
	}
	if err := s.PauseQueue(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	later := epoch.Add(24 * time.Hour)
	mustEnqueue(t, ctx, s, mk("bad", "q", time.Time{}), mk("sib-1", "q", later), mk("sib-2", "q", later),
		mk("sib-3", "paused", time.Time{}))
	for crash := 1; crash <= headgate.CrashLimitDefault; crash++ {
		claims := mustAdmit(t, ctx, s, admitReq("w", 1, "q"))
		if len(claims) != 1 || claims[0].Envelope.ID != "bad" {
			t.Fatalf("crash %d: admitted %v, want [bad]", crash, ids(claims))
		}
		kill(t, ctx, s, claims)
		advance(t, ctx, s, 10*time.Second)
		if _, _, err := s.PromoteDue(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, ctx, s, "bad", headgate.StateQuarantined)
	advance(t, ctx, s, 24*time.Hour)
	if _, _, err := s.PromoteDue(ctx, 10); err != nil { // sib-1, sib-2 held as they become available
		t.Fatal(err)
	}
	if err := s.ResumeQueue(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	if got := mustAdmit(t, ctx, s, admitReq("w", 10, "q", "paused")); len(got) != 0 { // sib-3 held by admission
		t.Errorf("admitted %v while the fingerprint is quarantined", ids(got))
	}
	q, p := queueStat(t, s, "q"), queueStat(t, s, "paused")
	if q.Held != 2 || q.Counts[headgate.StateAvailable] != 0 || q.Unfinished != 2 {
		t.Errorf("stats of q: held %d available %d unfinished %d, want 2, 0, 2", q.Held, q.Counts[headgate.StateAvailable], q.Unfinished)
	}
	if p.Held != 1 || p.Counts[headgate.StateAvailable] != 0 {
		t.Errorf("stats of paused: held %d available %d, want 1 and 0", p.Held, p.Counts[headgate.StateAvailable])
	}
	checkCounts(t, s)
	mustCancel(t, ctx, s, "sib-2")
	if _, err := s.ReleaseQuarantine(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	if q := queueStat(t, s, "q"); q.Held != 0 || q.Counts[headgate.StateAvailable] != 1 {
		t.Errorf("after release: held %d available %d, want 0 and 1", q.Held, q.Counts[headgate.StateAvailable])
	}
	wantAdmitted(t, ctx, s, admitReq("w", 10, "q", "paused"), []string{"sib-1", "sib-3"}, " after release")
}

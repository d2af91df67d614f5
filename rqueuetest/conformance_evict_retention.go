package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// evictRetentionCases cover retention of every terminal state: completed as the job
// says, archived, undecodable and cancelled by the namespace policy, quarantined never.
var evictRetentionCases = []conformanceCase{
	{"Evict/RetentionOfEveryTerminalState", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		var jobs []headgate.Envelope
		for _, id := range []string{"completed", "archived", "undecodable", "cancelled", "quarantined"} {
			e := job(id)
			e.Retention = 0 // the job's retention is for its success only
			if id == "completed" {
				e.Retention = time.Hour
			}
			e.Fingerprint = id
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
		p, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.CrashLimit = 1
		if err := s.SetPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		mustCancel(t, ctx, s, "cancelled")
		outcomes := map[string]headgate.Outcome{"completed": headgate.OutcomeSuccess,
			"archived": headgate.OutcomeSkip, "undecodable": headgate.OutcomeUndecodable}
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 10)) {
			if o, ok := outcomes[c.Envelope.ID]; ok {
				mustAck(t, ctx, s, c, o, nil)
			}
		}
		advance(t, ctx, s, time.Minute) // the quarantined job's lease runs out
		if r, err := s.ReclaimExpired(ctx, 10); err != nil || len(r) != 1 || !r[0].Quarantined {
			t.Fatalf("reclaim: %+v, %v", r, err)
		}
		evict := func(want int) {
			t.Helper()
			n, err := s.EvictRetained(ctx, 100)
			if err != nil || n != want {
				t.Errorf("evicted %d, %v; want %d", n, err, want)
			}
		}
		advance(t, ctx, s, time.Hour-time.Minute)
		evict(1)
		wantState(t, ctx, s, "completed", headgate.StateDeleted)
		advance(t, ctx, s, headgate.RetentionFailedDefault-time.Hour-time.Millisecond)
		evict(0)
		advance(t, ctx, s, time.Millisecond)
		evict(3)
		for id, want := range map[string]headgate.State{"archived": headgate.StateDeleted, "cancelled": headgate.StateDeleted,
			"undecodable": headgate.StateDeleted, "quarantined": headgate.StateQuarantined} {
			wantState(t, ctx, s, id, want)
		}
		advance(t, ctx, s, 365*24*time.Hour)
		evict(0)
		wantState(t, ctx, s, "quarantined", headgate.StateQuarantined)
	}},
	{"Evict/RetentionFromPolicy", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		p, err := s.Policy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.RetentionArchived, p.RetentionUndecodable = time.Hour, 0 // 0: never evicted
		if err := s.SetPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, ctx, s, job("archived"), job("undecodable"))
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 10)) {
			o := headgate.OutcomeSkip
			if c.Envelope.ID == "undecodable" {
				o = headgate.OutcomeUndecodable
			}
			mustAck(t, ctx, s, c, o, nil)
		}
		advance(t, ctx, s, time.Hour)
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 1 {
			t.Errorf("evicted %d, %v; want the archived job", n, err)
		}
		wantState(t, ctx, s, "archived", headgate.StateDeleted)
		advance(t, ctx, s, 10*365*24*time.Hour)
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 0 {
			t.Errorf("evicted %d, %v; want none at retention 0", n, err)
		}
		wantState(t, ctx, s, "undecodable", headgate.StateUndecodable)
	}},
	// Cancel finalizes after its first write, so the policy it reads for the retention
	// there must not fail: an unusable policy key means the built-in retention.
	{"Evict/CancelledWithUnusablePolicy", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		if err := s.Client().Set(ctx, nsKey(s, "policy"), "corrupt", 0).Err(); err != nil {
			t.Fatal(err)
		}
		mustCancel(t, ctx, s, "a")
		wantState(t, ctx, s, "a", headgate.StateCancelled)
		advance(t, ctx, s, headgate.RetentionFailedDefault)
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 1 {
			t.Errorf("evicted %d, %v; want the cancelled job after the default retention", n, err)
		}
	}},
}

package rqueuetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// transitionCases cover the transition table of the job contract.
var transitionCases = []conformanceCase{
	{"Enqueue/Defaults", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		res := mustEnqueue(t, ctx, s,
			headgate.Envelope{ID: "now", Kind: "k", Tags: []string{"b", "a", "b"}},
			headgate.Envelope{ID: "later", Kind: "k", ScheduledAt: epoch.Add(time.Minute)},
			headgate.Envelope{ID: "staged", Kind: "k", Pending: true})
		want := []headgate.State{headgate.StateAvailable, headgate.StateScheduled, headgate.StatePending}
		for i, r := range res {
			if r.State != want[i] || r.Replayed {
				t.Errorf("enqueue %s: state %s replayed %v, want %s, not replayed", r.ID, r.State, r.Replayed, want[i])
			}
		}
		if !res[0].ScheduledAt.Equal(epoch) {
			t.Errorf("scheduled_at defaults to the store time: got %v, want %v", res[0].ScheduledAt, epoch)
		}
		delayed := mustEnqueue(t, ctx, s, headgate.Envelope{ID: "delayed", Kind: "k", ScheduledIn: time.Minute})
		if delayed[0].State != headgate.StateScheduled || !delayed[0].ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("ScheduledIn counts from the store time: got %s at %v, want scheduled at %v",
				delayed[0].State, delayed[0].ScheduledAt, epoch.Add(time.Minute))
		}
		j := getJob(t, ctx, s, "now")
		if j.Queue != "default" || j.MaxAttempts != 25 || j.SchemaVersion != 1 || j.Weight != 1 ||
			!slices.Equal(j.Tags, []string{"a", "b"}) || j.Fence != 0 || j.Attempt != 0 {
			t.Errorf("defaults: got queue %q max_attempts %d schema %d weight %d tags %q fence %d attempt %d",
				j.Queue, j.MaxAttempts, j.SchemaVersion, j.Weight, j.Tags, j.Fence, j.Attempt)
		}
	}},
	{"Enqueue/ReplaySameContentWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.Fingerprint = "fp"
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		before := snapshot(t, ctx, s)
		e.Payload = []byte("other payload")
		res := mustEnqueue(t, ctx, s, e)
		if !res[0].Replayed || res[0].State != headgate.StateRunning {
			t.Errorf("replay: got %+v, want replayed, running", res[0])
		}
		if after := snapshot(t, ctx, s); after != before {
			t.Errorf("replay wrote:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		mustAck(t, ctx, s, c, headgate.OutcomeSuccess, nil)
	}},
	{"Enqueue/IDConflictWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		for _, change := range []func(*headgate.Envelope){
			func(e *headgate.Envelope) { e.Kind = "other" },
			func(e *headgate.Envelope) { e.Fingerprint = "other" },
			func(e *headgate.Envelope) { e.Queue = "other" },
		} {
			e := job("a")
			change(&e)
			err := unchanged(t, ctx, s, "id conflict", func() error {
				_, err := s.Enqueue(ctx, job("fresh"), e)
				return err
			})
			if c := wantErr[*headgate.IDConflictError](t, err); c != nil && c.JobID != "a" {
				t.Errorf("IDConflict names %q, want a", c.JobID)
			}
		}
	}},
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
	{"Ack/SuccessRetentionZeroDeletes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.Retention = 0
		mustEnqueue(t, ctx, s, e)
		// A failed attempt, output and progress leave keys beside the job's hash; the
		// deletion must take them too.
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, &headgate.AckOpts{Error: "once", Delay: time.Second})
		advance(t, ctx, s, time.Second)
		s.PromoteDue(ctx, 10)
		c := admitOne(t, ctx, s)
		if _, err := s.WriteOutput(ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteProgress(ctx, c.LeaseRef(), headgate.Progress{Current: 1}); err != nil {
			t.Fatal(err)
		}
		if st := mustAck(t, ctx, s, c, headgate.OutcomeSuccess, nil); st != headgate.StateDeleted {
			t.Errorf("ack success at retention 0: %s, want deleted", st)
		}
		wantState(t, ctx, s, "a", headgate.StateDeleted)
		if snap := snapshot(t, ctx, s); strings.Contains(snap, ":a ") || strings.Contains(snap, "\"a\"") {
			t.Errorf("deleted job left keys behind:\n%s", snap)
		}
	}},
	{"Ack/SuccessRetainedWithResultThenEvicted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		st := mustAck(t, ctx, s, c, headgate.OutcomeSuccess, &headgate.AckOpts{
			Result: &headgate.Blob{SchemaVersion: 2, Bytes: []byte("out")}, Logs: []string{"l1", "l2"}})
		if st != headgate.StateCompleted {
			t.Errorf("ack success: %s, want completed", st)
		}
		r, err := s.JobResult(ctx, "a")
		if err != nil || r == nil || r.SchemaVersion != 2 || string(r.Bytes) != "out" || r.Fence != c.Fence || !r.UpdatedAt.Equal(epoch) {
			t.Errorf("result: %+v, %v", r, err)
		}
		if errs, _ := s.JobErrors(ctx, "a"); !slices.Equal(errs, []string{"success logs: l1 | l2"}) {
			t.Errorf("history %q", errs)
		}
		advance(t, ctx, s, time.Hour-time.Millisecond)
		if n, _ := s.EvictRetained(ctx, 10); n != 0 {
			t.Errorf("evicted %d before retention lapsed", n)
		}
		advance(t, ctx, s, time.Millisecond)
		if n, _ := s.EvictRetained(ctx, 10); n != 1 {
			t.Errorf("evicted %d after retention, want 1", n)
		}
		wantState(t, ctx, s, "a", headgate.StateDeleted)
	}},
	{"Ack/RetryDelayBackoffAndArchive", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.MaxAttempts = 3
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		if st := mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom", Delay: 5 * time.Second}); st != headgate.StateRetryable {
			t.Errorf("retry: %s", st)
		}
		j := getJob(t, ctx, s, "a")
		if j.Attempt != 1 || !j.ScheduledAt.Equal(epoch.Add(5*time.Second)) {
			t.Errorf("after retry with delay: attempt %d at %v", j.Attempt, j.ScheduledAt)
		}
		advance(t, ctx, s, 5*time.Second)
		s.PromoteDue(ctx, 10)
		c = admitOne(t, ctx, s)
		mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "again"})
		j = getJob(t, ctx, s, "a")
		// Second failure: base (1s) * 2^(2-1).
		if want := epoch.Add(5*time.Second + 2*time.Second); j.Attempt != 2 || !j.ScheduledAt.Equal(want) {
			t.Errorf("after backoff retry: attempt %d at %v, want 2 at %v", j.Attempt, j.ScheduledAt, want)
		}
		advance(t, ctx, s, 2*time.Second)
		s.PromoteDue(ctx, 10)
		c = admitOne(t, ctx, s)
		if st := mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "last"}); st != headgate.StateArchived {
			t.Errorf("retry with attempts spent: %s, want archived", st)
		}
		errs, _ := s.JobErrors(ctx, "a")
		want := []string{"retry (attempt 1): boom", "retry (attempt 2): again", "retry (attempt 3): last"}
		if !slices.Equal(errs, want) {
			t.Errorf("history %q, want %q", errs, want)
		}
	}},
	{"Ack/SkipUndecodableRevoke", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("skip"), job("undecodable"), job("revoke"))
		outcomes := map[string]headgate.Outcome{"skip": headgate.OutcomeSkip,
			"undecodable": headgate.OutcomeUndecodable, "revoke": headgate.OutcomeRevoke}
		want := map[string]headgate.State{"skip": headgate.StateArchived,
			"undecodable": headgate.StateUndecodable, "revoke": headgate.StateDeleted}
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
			id := c.Envelope.ID
			mustAck(t, ctx, s, c, outcomes[id], &headgate.AckOpts{Error: "why " + id})
			wantState(t, ctx, s, id, want[id])
		}
		if errs, _ := s.JobErrors(ctx, "undecodable"); !slices.Equal(errs, []string{"undecodable: why undecodable"}) {
			t.Errorf("undecodable history %q", errs)
		}
	}},
	{"Ack/SnoozeSpendsNoAttempt", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		if _, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeSnooze, nil); err == nil {
			t.Errorf("snooze without delay accepted")
		}
		if st := mustAck(t, ctx, s, c, headgate.OutcomeSnooze, &headgate.AckOpts{Delay: time.Minute}); st != headgate.StateScheduled {
			t.Errorf("snooze: %s", st)
		}
		j := getJob(t, ctx, s, "a")
		if j.Attempt != 0 || !j.ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("snoozed: attempt %d at %v", j.Attempt, j.ScheduledAt)
		}
	}},
	{"Ack/RateLimitedKeepsCountersAndRoute", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.StickyWorker, e.PartitionKey = "w1", "tenant"
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		if st := mustAck(t, ctx, s, c, headgate.OutcomeRateLimited, nil); st != headgate.StateAvailable {
			t.Errorf("rate limited: %s", st)
		}
		j := getJob(t, ctx, s, "a")
		if j.Attempt != 0 || j.CrashAttempt != 0 || j.StickyWorker != "w1" || j.PartitionKey != "tenant" {
			t.Errorf("after rate limited: %+v", j.Envelope)
		}
		if got := mustAdmit(t, ctx, s, admitReq("w2", 1)); len(got) != 0 {
			t.Errorf("another worker admitted the pinned job")
		}
		admitOne(t, ctx, s)
	}},
	{"Ack/LeaseLostIsNotAckable", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		err := unchanged(t, ctx, s, "ack lease_lost", func() error {
			_, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeLeaseLost, nil)
			return err
		})
		wantErr[*headgate.InvalidError](t, err)
	}},
	{"Ack/OnlyTheHolder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		for name, l := range map[string]headgate.LeaseRef{
			"other lease id": {JobID: "a", LeaseID: "other", Fence: c.Fence},
			"old fence":      {JobID: "a", LeaseID: c.LeaseID, Fence: c.Fence - 1},
			"unknown job":    {JobID: "nope", LeaseID: c.LeaseID, Fence: 1},
		} {
			err := unchanged(t, ctx, s, name, func() error {
				_, err := s.Ack(ctx, l, headgate.OutcomeSuccess, nil)
				return err
			})
			wantErr[*headgate.LeaseRejectedError](t, err)
		}
		res, err := s.AckMany(ctx, []headgate.AckRequest{
			{Lease: headgate.LeaseRef{JobID: "a", LeaseID: "other", Fence: 1}, Outcome: headgate.OutcomeSuccess},
			{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess},
		})
		if err != nil || res[0].Err == nil || res[1].Err != nil || res[1].State != headgate.StateCompleted {
			t.Errorf("ack many: %+v, %v; want the stranger rejected and the holder completed", res, err)
		}
	}},
	{"Renew/ExtendsHeldReportsLost", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		claims := mustAdmit(t, ctx, s, admitReq("w", 2))
		if err := s.Cancel(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, 30*time.Second)
		lost, err := s.Renew(ctx, []headgate.LeaseRef{claims[0].LeaseRef(), claims[1].LeaseRef()}, time.Minute)
		if err != nil || !slices.Equal(lost, []string{"b"}) {
			t.Errorf("renew: lost %v, %v; want [b]", lost, err)
		}
		advance(t, ctx, s, 45*time.Second) // past the first lease, inside the renewed one
		if r, _ := s.ReclaimExpired(ctx, 10); len(r) != 0 {
			t.Errorf("reclaimed a renewed lease: %+v", r)
		}
		if j := getJob(t, ctx, s, "a"); !j.LeaseExpiresAt.Equal(epoch.Add(90 * time.Second)) {
			t.Errorf("renewed lease expires %v", j.LeaseExpiresAt)
		}
	}},
	{"Reclaim/CrashChargedToStepThenQuarantine", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e, sib := job("a"), job("sibling")
		e.Fingerprint, sib.Fingerprint = "poison", "poison"
		sib.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, e, sib)
		for crash := 1; crash <= 3; crash++ {
			c := admitOne(t, ctx, s)
			if c.Envelope.ID != "a" {
				t.Fatalf("admitted %s, want a", c.Envelope.ID)
			}
			if err := s.Checkpoint(ctx, c.LeaseRef(), headgate.Checkpoint{InProgress: "charge", Done: []string{"load"}}); err != nil {
				t.Fatal(err)
			}
			advance(t, ctx, s, time.Minute)
			r, err := s.ReclaimExpired(ctx, 10)
			if err != nil || len(r) != 1 {
				t.Fatalf("reclaim: %+v, %v", r, err)
			}
			want := headgate.Reclaimed{JobID: "a", Fingerprint: "poison", CrashAttempt: crash, Quarantined: crash == 3}
			if r[0] != want {
				t.Errorf("reclaim %d: %+v, want %+v", crash, r[0], want)
			}
			j := getJob(t, ctx, s, "a")
			if j.Checkpoint.CrashesByStep["charge"] != crash || j.Attempt != 0 || !slices.Equal(j.Checkpoint.Done, []string{"load"}) {
				t.Errorf("after crash %d: checkpoint %+v attempt %d", crash, j.Checkpoint, j.Attempt)
			}
			if crash < 3 {
				// Retryable after backoff on the crash count: CrashRetryBase, then twice it.
				now, _ := s.Now(ctx)
				backoff := headgate.CrashRetryBaseDefault << (crash - 1)
				if j.State != headgate.StateRetryable || !j.ScheduledAt.Equal(now.Add(backoff)) {
					t.Errorf("after crash %d: %s at %v, want retryable at %v", crash, j.State, j.ScheduledAt, now.Add(backoff))
				}
				advance(t, ctx, s, backoff)
				s.PromoteDue(ctx, 10)
			}
		}
		wantState(t, ctx, s, "a", headgate.StateQuarantined)
		// The fingerprint blocks new enqueues and the admission of siblings.
		fresh := job("fresh")
		fresh.Fingerprint = "poison"
		err := unchanged(t, ctx, s, "enqueue quarantined", func() error { _, err := s.Enqueue(ctx, fresh); return err })
		if q := wantErr[*headgate.QuarantinedError](t, err); q != nil && q.Fingerprint != "poison" {
			t.Errorf("quarantined names %q", q.Fingerprint)
		}
		advance(t, ctx, s, 2*time.Hour)
		s.PromoteDue(ctx, 10)
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
			t.Errorf("admitted %v with its fingerprint quarantined", ids(got))
		}
		// Quarantined jobs are exempt from eviction.
		advance(t, ctx, s, 48*time.Hour)
		s.EvictRetained(ctx, 10)
		wantState(t, ctx, s, "a", headgate.StateQuarantined)
		q, err := s.Quarantined(ctx)
		if err != nil || len(q) != 1 || q[0] != (headgate.QuarantinedFingerprint{Fingerprint: "poison", JobID: "a", Held: 1}) {
			t.Errorf("quarantine list: %+v, %v", q, err)
		}
		if n, err := s.ReleaseQuarantine(ctx, "poison"); err != nil || n != 1 {
			t.Errorf("release: %d, %v; want 1 sibling released", n, err)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"sibling"}) {
			t.Errorf("after release admitted %v, want [sibling]", got)
		}
		mustEnqueue(t, ctx, s, fresh)
	}},
	{"Promote/DueOnlyAndNextDue", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.ScheduledAt, b.ScheduledAt = epoch.Add(time.Second), epoch.Add(time.Minute)
		mustEnqueue(t, ctx, s, a, b)
		n, next, err := s.PromoteDue(ctx, 10)
		if err != nil || n != 0 || !next.Equal(a.ScheduledAt) {
			t.Errorf("promote before due: %d next %v, %v", n, next, err)
		}
		advance(t, ctx, s, time.Second)
		n, next, _ = s.PromoteDue(ctx, 10)
		if n != 1 || !next.Equal(b.ScheduledAt) {
			t.Errorf("promote at due: %d next %v", n, next)
		}
		wantState(t, ctx, s, "a", headgate.StateAvailable)
		wantState(t, ctx, s, "b", headgate.StateScheduled)
	}},
	{"Evict/TerminalStatesAfterRetention", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a-skip"), job("b-cancel"), job("c-keep"))
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 1)) {
			mustAck(t, ctx, s, c, headgate.OutcomeSkip, nil)
		}
		if err := s.Cancel(ctx, "b-cancel"); err != nil {
			t.Fatal(err)
		}
		advance(t, ctx, s, time.Hour)
		if n, _ := s.EvictRetained(ctx, 1); n != 1 {
			t.Errorf("evict with limit 1: %d", n)
		}
		if n, _ := s.EvictRetained(ctx, 10); n != 1 {
			t.Errorf("evict the rest: %d", n)
		}
		wantState(t, ctx, s, "c-keep", headgate.StateAvailable)
	}},
	{"Duty/OneHolderUntilExpiryOrRelease", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		claim := func(holder string) bool {
			ok, err := s.ClaimDuty(ctx, "reclaim", holder, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim("a") || claim("b") || !claim("a") {
			t.Errorf("claim: a must get and renew the duty, b must not")
		}
		advance(t, ctx, s, 10*time.Second)
		if !claim("b") {
			t.Errorf("b could not take an expired duty")
		}
		if err := s.ReleaseDuty(ctx, "reclaim", "a"); err != nil || claim("a") {
			t.Errorf("a released b's duty")
		}
		if err := s.ReleaseDuty(ctx, "reclaim", "b"); err != nil || !claim("a") {
			t.Errorf("a could not take a released duty")
		}
	}},
	{"OutputProgress/HolderOnlyStamped", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		out, err := s.WriteOutput(ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")})
		if err != nil || out.Fence != c.Fence || !out.UpdatedAt.Equal(epoch) {
			t.Errorf("write output: %+v, %v", out, err)
		}
		p, err := s.WriteProgress(ctx, c.LeaseRef(), headgate.Progress{Current: 3, Total: 10, Message: "m"})
		if err != nil || p.Fence != c.Fence || !p.UpdatedAt.Equal(epoch) {
			t.Errorf("write progress: %+v, %v", p, err)
		}
		if got, _ := s.JobOutput(ctx, "a"); got == nil || string(got.Bytes) != "o" {
			t.Errorf("read output: %+v", got)
		}
		if got, _ := s.JobProgress(ctx, "a"); got == nil || got.Current != 3 || got.Total != 10 || got.Message != "m" {
			t.Errorf("read progress: %+v", got)
		}
		stale := c.LeaseRef()
		stale.Fence--
		err = unchanged(t, ctx, s, "stale output", func() error {
			_, err := s.WriteOutput(ctx, stale, headgate.Blob{SchemaVersion: 1, Bytes: []byte("x")})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
		err = unchanged(t, ctx, s, "stale progress", func() error {
			_, err := s.WriteProgress(ctx, stale, headgate.Progress{Current: 1})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
		err = unchanged(t, ctx, s, "stale checkpoint", func() error {
			return s.Checkpoint(ctx, stale, headgate.Checkpoint{InProgress: "x"})
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
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
	{"Clock/FreezeAdvanceUnfreeze", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if now, _ := s.Now(ctx); !now.Equal(epoch) {
			t.Errorf("frozen now %v", now)
		}
		advance(t, ctx, s, 90*time.Second)
		if now, _ := s.Now(ctx); !now.Equal(epoch.Add(90 * time.Second)) {
			t.Errorf("advanced now %v", now)
		}
		if err := s.UnfreezeClock(ctx); err != nil {
			t.Fatal(err)
		}
		if now, _ := s.Now(ctx); now.Year() < 2024 {
			t.Errorf("unfrozen now %v is not the server's time", now)
		}
	}},
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

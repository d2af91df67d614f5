package rqueuetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// ackCases cover the Ack transition of the job contract.
var ackCases = []conformanceCase{
	{"Ack/SuccessRetentionZeroDeletes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.Retention = 0
		mustEnqueue(t, ctx, s, e)
		// A failed attempt, output and progress leave keys beside the job's hash; the
		// deletion must take them too.
		mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, &headgate.AckOpts{Error: "once", Delay: time.Second})
		advance(t, ctx, s, time.Second)
		mustPromote(t, ctx, s)
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
		ctx, c := heldJob(t, s)
		st := mustAck(t, ctx, s, c, headgate.OutcomeSuccess, &headgate.AckOpts{
			Result: &headgate.Blob{SchemaVersion: 2, Bytes: []byte("out")}, Logs: []string{"l1", "l2"}})
		if st != headgate.StateCompleted {
			t.Errorf("ack success: %s, want completed", st)
		}
		r, err := s.JobResult(ctx, "a")
		if err != nil || r == nil || r.SchemaVersion != 2 || string(r.Bytes) != "out" || r.Fence != c.Fence || !r.UpdatedAt.Equal(epoch) {
			t.Errorf("result: %+v, %v", r, err)
		}
		if errs := historyOf(t, ctx, s, "a"); !slices.Equal(errs, []string{"success -> completed (attempt 1, fence 1, lease " + c.LeaseID + "); logs: l1 | l2"}) {
			t.Errorf("history %q", errs)
		}
		advance(t, ctx, s, time.Hour-time.Millisecond)
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 0 {
			t.Errorf("evicted %d before retention lapsed (err %v)", n, err)
		}
		advance(t, ctx, s, time.Millisecond)
		if n, err := s.EvictRetained(ctx, 10); err != nil || n != 1 {
			t.Errorf("evicted %d after retention, want 1 (err %v)", n, err)
		}
		wantState(t, ctx, s, "a", headgate.StateDeleted)
	}},
	{"Ack/RetryDelayBackoffAndArchive", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.MaxAttempts = 3
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		leases := []string{c.LeaseID}
		if st := mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom", Delay: 5 * time.Second}); st != headgate.StateRetryable {
			t.Errorf("retry: %s", st)
		}
		j := getJob(t, ctx, s, "a")
		if j.Attempt != 1 || !j.ScheduledAt.Equal(epoch.Add(5*time.Second)) {
			t.Errorf("after retry with delay: attempt %d at %v", j.Attempt, j.ScheduledAt)
		}
		advance(t, ctx, s, 5*time.Second)
		mustPromote(t, ctx, s)
		c = admitOne(t, ctx, s)
		leases = append(leases, c.LeaseID)
		mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "again"})
		j = getJob(t, ctx, s, "a")
		// Second failure: base (1s) * 2^(2-1).
		if want := epoch.Add(5*time.Second + 2*time.Second); j.Attempt != 2 || !j.ScheduledAt.Equal(want) {
			t.Errorf("after backoff retry: attempt %d at %v, want 2 at %v", j.Attempt, j.ScheduledAt, want)
		}
		advance(t, ctx, s, 2*time.Second)
		mustPromote(t, ctx, s)
		c = admitOne(t, ctx, s)
		leases = append(leases, c.LeaseID)
		if st := mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "last"}); st != headgate.StateArchived {
			t.Errorf("retry with attempts spent: %s, want archived", st)
		}
		errs := historyOf(t, ctx, s, "a")
		want := []string{"retry -> retryable (attempt 1, fence 1, lease " + leases[0] + "): boom",
			"retry -> retryable (attempt 2, fence 2, lease " + leases[1] + "): again",
			"retry -> archived (attempt 3, fence 3, lease " + leases[2] + "): last"}
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
		lease := ""
		for _, c := range mustAdmit(t, ctx, s, admitReq("w", 3)) {
			id := c.Envelope.ID
			lease = c.LeaseID
			mustAck(t, ctx, s, c, outcomes[id], &headgate.AckOpts{Error: "why " + id})
			wantState(t, ctx, s, id, want[id])
		}
		if errs := historyOf(t, ctx, s, "undecodable"); !slices.Equal(errs, []string{"undecodable -> undecodable (attempt 1, fence 1, lease " + lease + "): why undecodable"}) {
			t.Errorf("undecodable history %q", errs)
		}
	}},
	// Acks without details travel in fewer arguments than those with (lua/ack.lua): in one
	// batch, each ack gets its own details, whichever acks of it have some.
	{"Ack/BatchOfPlainAndDetailedAcks", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		ids := []string{"plain", "retry", "plain2", "snooze", "skip"}
		var envs []headgate.Envelope
		for _, id := range ids {
			e := job(id)
			e.Retention = time.Hour
			envs = append(envs, e)
		}
		mustEnqueue(t, ctx, s, envs...)
		claims := mustAdmit(t, ctx, s, admitReq("w", len(ids)))
		byID := map[string]headgate.Claim{}
		for _, c := range claims {
			byID[c.Envelope.ID] = c
		}
		opts := map[string]*headgate.AckOpts{
			"retry":  {Error: "boom", Delay: 5 * time.Second, Logs: []string{"l1"}},
			"snooze": {Delay: time.Minute},
			"skip":   {Error: "no use", Stack: "goroutine 1"},
		}
		outcomes := map[string]headgate.Outcome{"plain": headgate.OutcomeSuccess, "retry": headgate.OutcomeRetry,
			"plain2": headgate.OutcomeSuccess, "snooze": headgate.OutcomeSnooze, "skip": headgate.OutcomeSkip}
		var acks []headgate.AckRequest
		for _, id := range ids {
			c, ok := byID[id]
			if !ok {
				t.Fatalf("%s was not admitted: %d claims", id, len(claims))
			}
			acks = append(acks, headgate.AckRequest{Lease: c.LeaseRef(), Outcome: outcomes[id], Opts: opts[id]})
		}
		res, err := s.AckMany(ctx, acks)
		if err != nil {
			t.Fatal(err)
		}
		want := []headgate.State{headgate.StateCompleted, headgate.StateRetryable, headgate.StateCompleted,
			headgate.StateScheduled, headgate.StateArchived}
		for i, r := range res {
			if r.Err != nil || r.State != want[i] {
				t.Errorf("ack %s: %s, %v; want %s", ids[i], r.State, r.Err, want[i])
			}
		}
		if j := getJob(t, ctx, s, "retry"); j.Attempt != 1 || !j.ScheduledAt.Equal(epoch.Add(5*time.Second)) {
			t.Errorf("retry: attempt %d at %v, want 1 at +5s", j.Attempt, j.ScheduledAt)
		}
		if j := getJob(t, ctx, s, "snooze"); j.Attempt != 0 || !j.ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("snooze: attempt %d at %v, want 0 at +1m", j.Attempt, j.ScheduledAt)
		}
		lease := byID["retry"].LeaseID
		for id, want := range map[string][]string{
			"plain":  nil,
			"plain2": nil,
			"snooze": nil,
			"retry":  {"retry -> retryable (attempt 1, fence 1, lease " + lease + "): boom; logs: l1"},
			"skip":   {"skip -> archived (attempt 1, fence 1, lease " + lease + "): no use"},
		} {
			if got := historyOf(t, ctx, s, id); !slices.Equal(got, want) {
				t.Errorf("%s history %q, want %q", id, got, want)
			}
		}
		if errs, err := s.JobErrors(ctx, "skip"); err != nil || len(errs) != 1 || errs[0].Stack != "goroutine 1" {
			t.Errorf("skip's history %+v, %v; want the stack kept", errs, err)
		}
	}},
	{"Ack/SnoozeSpendsNoAttempt", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
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
		ctx, c := heldJob(t, s)
		err := unchanged(t, ctx, s, "ack lease_lost", func() error {
			_, err := s.Ack(ctx, c.LeaseRef(), headgate.OutcomeLeaseLost, nil)
			return err
		})
		wantErr[*headgate.InvalidError](t, err)
	}},
	{"Ack/OnlyTheHolder", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
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
	// An ack Redis applied whose reply was lost is sent again (see Admit/RepeatSameLease):
	// the repeat reports the first ack's end and counts nothing twice.
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

package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// ackHistoryCases cover the error history the Ack and Reclaim transitions keep: one
// structured entry per failed, lost, handed-back or logged attempt, capped per job.
var ackHistoryCases = []conformanceCase{
	{"Ack/HistoryEntriesAreStructured", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.MaxAttempts = 2
		mustEnqueue(t, ctx, s, e)
		c := admitOne(t, ctx, s)
		mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: "panic: boom",
			Stack: "goroutine 7 [running]:\nmain.handler()", Logs: []string{"l1", "l2"}})
		advance(t, ctx, s, headgate.RetryBaseDefault)
		if _, _, err := s.PromoteDue(ctx, 10); err != nil {
			t.Fatal(err)
		}
		c2 := admitOne(t, ctx, s)
		if st := mustAck(t, ctx, s, c2, headgate.OutcomeRetry, &headgate.AckOpts{Error: "last"}); st != headgate.StateArchived {
			t.Fatalf("last retry: %s, want archived", st)
		}
		errs, err := s.JobErrors(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		want := []headgate.AttemptError{
			{At: epoch, Attempt: 1, Fence: c.Fence, LeaseID: c.LeaseID, Outcome: "retry", State: headgate.StateRetryable,
				Message: "panic: boom", Stack: "goroutine 7 [running]:\nmain.handler()", Logs: []string{"l1", "l2"}},
			// The outcome as applied: the last retry archived the job.
			{At: epoch.Add(headgate.RetryBaseDefault), Attempt: 2, Fence: c2.Fence, LeaseID: c2.LeaseID, Outcome: "retry",
				State: headgate.StateArchived, Message: "last"},
		}
		if !equalHistory(errs, want) {
			t.Errorf("history:\n got %+v\nwant %+v", errs, want)
		}

		// A lost lease is recorded the same way, by the reclaimer.
		mustEnqueue(t, ctx, s, job("b"))
		cb := admitOne(t, ctx, s)
		advance(t, ctx, s, time.Minute)
		if _, err := s.ReclaimExpired(ctx, 10); err != nil {
			t.Fatal(err)
		}
		errs, err = s.JobErrors(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		now := epoch.Add(headgate.RetryBaseDefault + time.Minute)
		want = []headgate.AttemptError{{At: now, CrashAttempt: 1, Fence: cb.Fence, LeaseID: cb.LeaseID,
			Outcome: "lease_lost", State: headgate.StateRetryable, Message: "lease expired"}}
		if !equalHistory(errs, want) {
			t.Errorf("lease lost history:\n got %+v\nwant %+v", errs, want)
		}
	}},
	{"Ack/HistoryCappedInEntries", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.MaxAttempts = 100
		mustEnqueue(t, ctx, s, e)
		const n = headgate.ErrorHistoryMaxEntries + 8
		for i := 1; i <= n; i++ {
			c := admitOne(t, ctx, s)
			mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: fmt.Sprintf("fail %d", i), Delay: time.Millisecond})
			advance(t, ctx, s, time.Millisecond)
			if _, _, err := s.PromoteDue(ctx, 10); err != nil {
				t.Fatal(err)
			}
		}
		errs, err := s.JobErrors(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) != headgate.ErrorHistoryMaxEntries {
			t.Fatalf("history holds %d entries, want %d", len(errs), headgate.ErrorHistoryMaxEntries)
		}
		// The oldest are dropped.
		if first, last := errs[0], errs[len(errs)-1]; first.Message != "fail 9" || first.Attempt != 9 || last.Message != fmt.Sprintf("fail %d", n) {
			t.Errorf("history runs from %q (attempt %d) to %q, want fail 9 (attempt 9) to fail %d", first.Message, first.Attempt, last.Message, n)
		}
	}},
	{"Ack/HistoryCappedInBytes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		e := job("a")
		e.MaxAttempts = 100
		mustEnqueue(t, ctx, s, e)
		big := strings.Repeat("x", 3*headgate.ErrorStackMaxBytes)
		for i := 1; i <= 8; i++ {
			c := admitOne(t, ctx, s)
			mustAck(t, ctx, s, c, headgate.OutcomeRetry, &headgate.AckOpts{Error: fmt.Sprintf("fail %d ", i) + big,
				Stack: big, Logs: []string{big, "newest line"}, Delay: time.Millisecond})
			advance(t, ctx, s, time.Millisecond)
			if _, _, err := s.PromoteDue(ctx, 10); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := s.Client().LRange(ctx, nsKey(s, "errors:a"), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, l := range raw {
			total += len(l)
		}
		if total > headgate.ErrorHistoryMaxBytes || len(raw) < 2 {
			t.Errorf("history holds %d entries of %d bytes, want at least 2 within %d bytes", len(raw), total, headgate.ErrorHistoryMaxBytes)
		}
		errs, err := s.JobErrors(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		last := errs[len(errs)-1]
		switch {
		case !strings.HasPrefix(last.Message, "fail 8 ") || len(last.Message) > headgate.ErrorMessageMaxBytes:
			t.Errorf("newest message is %d bytes starting %.10q, want fail 8 cut to %d", len(last.Message), last.Message, headgate.ErrorMessageMaxBytes)
		case len(last.Stack) > headgate.ErrorStackMaxBytes || !strings.HasSuffix(last.Stack, "(truncated)"):
			t.Errorf("stack is %d bytes, want cut to %d and marked", len(last.Stack), headgate.ErrorStackMaxBytes)
		case len(strings.Join(last.Logs, "")) > headgate.ErrorLogsMaxBytes:
			t.Errorf("logs are %d bytes, want at most %d", len(strings.Join(last.Logs, "")), headgate.ErrorLogsMaxBytes)
		case len(last.Logs) == 0 || last.Logs[len(last.Logs)-1] != "newest line":
			t.Errorf("logs %.40q, want the newest lines kept", last.Logs)
		}
	}},
	{"Ack/HandBackIsItsOwnOutcome", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		lease := ""
		for _, c := range mustAdmit(t, ctx, s, admitReq("w1", 2)) {
			lease = c.LeaseID
			o := headgate.OutcomeHandBack
			if c.Envelope.ID == "b" {
				o = headgate.OutcomeRateLimited
			}
			if st := mustAck(t, ctx, s, c, o, nil); st != headgate.StateAvailable {
				t.Errorf("%s of %s: %s, want available", o, c.Envelope.ID, st)
			}
		}
		for _, id := range []string{"a", "b"} {
			if j := getJob(t, ctx, s, id); j.Attempt != 0 || j.CrashAttempt != 0 || j.Snoozes != 0 {
				t.Errorf("%s: attempt %d crash %d snoozes %d, want no counter moved", id, j.Attempt, j.CrashAttempt, j.Snoozes)
			}
		}
		if h := historyOf(t, ctx, s, "a"); !slices.Equal(h, []string{"hand_back -> available (attempt 1, fence 1, lease " + lease + ")"}) {
			t.Errorf("hand-back history %q", h)
		}
		// Rate limiting asked by a handler is routine: no entry.
		if h := historyOf(t, ctx, s, "b"); len(h) != 0 {
			t.Errorf("rate-limited history %q, want none", h)
		}
		if got := ids(mustAdmit(t, ctx, s, admitReq("w2", 2))); len(got) != 2 {
			t.Errorf("after hand-back admitted %v, want both", got)
		}
	}},
}

// equalHistory compares histories field by field (times by instant).
func equalHistory(got, want []headgate.AttemptError) bool {
	return slices.EqualFunc(got, want, func(a, b headgate.AttemptError) bool {
		return a.At.Equal(b.At) && a.Attempt == b.Attempt && a.CrashAttempt == b.CrashAttempt && a.Fence == b.Fence &&
			a.LeaseID == b.LeaseID && a.Outcome == b.Outcome && a.State == b.State && a.Message == b.Message &&
			a.Stack == b.Stack && slices.Equal(a.Logs, b.Logs)
	})
}

// historyOf returns a job's error history, each entry as AttemptError.String renders it.
func historyOf(t testing.TB, ctx context.Context, s *headgate.Store, id string) []string {
	t.Helper()
	errs, err := s.JobErrors(ctx, id)
	if err != nil {
		t.Fatalf("errors of %s: %v", id, err)
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.String()
	}
	return out
}

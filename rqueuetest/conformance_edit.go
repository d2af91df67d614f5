package rqueuetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// editCases cover the operator's Edit of a job that is neither running nor finished.
var editCases = []conformanceCase{
	{"Edit/AvailablePriorityReranks", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"), job("c"))
		r, err := s.Edit(ctx, "c", headgate.JobEdit{Priority: new(int32(5))})
		if err != nil || r.State != headgate.StateAvailable {
			t.Fatalf("edit: %+v, %v", r, err)
		}
		got := mustAdmit(t, ctx, s, admitReq("w", 3))
		if want := []string{"c", "a", "b"}; !slices.Equal(ids(got), want) {
			t.Errorf("admitted %v, want %v", ids(got), want)
		}
	}},
	{"Edit/AvailablePartitionMoves", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.PartitionKey, b.PartitionKey = "t1", "t1"
		mustEnqueue(t, ctx, s, a, b)
		if _, err := s.Edit(ctx, "a", headgate.JobEdit{PartitionKey: new("t2")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Edit(ctx, "b", headgate.JobEdit{PartitionKey: new("t2")}); err != nil {
			t.Fatal(err)
		}
		got := mustAdmit(t, ctx, s, admitReq("w", 3))
		if len(got) != 2 {
			t.Fatalf("admitted %v, want a and b", ids(got))
		}
		for _, c := range got {
			if c.Envelope.PartitionKey != "t2" {
				t.Errorf("%s admitted from partition %q, want t2", c.Envelope.ID, c.Envelope.PartitionKey)
			}
		}
	}},
	{"Edit/ScheduledTimeMoves", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		later := job("later")
		later.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, later, job("now"))
		at := epoch.Add(2 * time.Hour)
		r, err := s.Edit(ctx, "later", headgate.JobEdit{ScheduledAt: &at})
		if err != nil || r.State != headgate.StateScheduled || !r.ScheduledAt.Equal(at) {
			t.Fatalf("edit scheduled: %+v, %v", r, err)
		}
		// An available job given a future time waits for it.
		r, err = s.Edit(ctx, "now", headgate.JobEdit{ScheduledAt: &at})
		if err != nil || r.State != headgate.StateScheduled || !r.ScheduledAt.Equal(at) {
			t.Fatalf("edit available: %+v, %v", r, err)
		}
		wantAdmitted(t, ctx, s, admitReq("w", 3), nil, " before their time")
		advance(t, ctx, s, time.Hour)
		if n := mustPromote(t, ctx, s); n != 0 {
			t.Errorf("promoted %d jobs at the old time", n)
		}
		advance(t, ctx, s, time.Hour)
		if n := mustPromote(t, ctx, s); n != 2 {
			t.Errorf("promoted %d jobs at the new time, want 2", n)
		}
	}},
	{"Edit/ScheduledDueTimeMakesAvailable", func(t *testing.T, s *headgate.Store) {
		// A scheduled or retryable job given a time that has come is available at once,
		// not at the promote duty's next run: "edit ID -at 0s" runs it now.
		ctx := freeze(t, s)
		later, retried := job("later"), job("retried")
		later.ScheduledAt = epoch.Add(time.Hour)
		later.PartitionKey = "t1"
		mustEnqueue(t, ctx, s, later, retried)
		if st := mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeRetry, &headgate.AckOpts{Error: "boom"}); st != headgate.StateRetryable {
			t.Fatalf("retried is %s after its failed attempt, want retryable", st)
		}
		now := epoch
		r, err := s.Edit(ctx, "later", headgate.JobEdit{ScheduledAt: &now, PartitionKey: new("t2")})
		if err != nil || r.State != headgate.StateAvailable || !r.ScheduledAt.Equal(now) {
			t.Fatalf("edit scheduled to now: %+v, %v; want available at %v", r, err, now)
		}
		past := epoch.Add(-time.Minute)
		r, err = s.Edit(ctx, "retried", headgate.JobEdit{ScheduledAt: &past})
		if err != nil || r.State != headgate.StateAvailable || !r.ScheduledAt.Equal(now) {
			t.Fatalf("edit retryable to the past: %+v, %v; want available at now, %v", r, err, now)
		}
		if n := mustPromote(t, ctx, s); n != 0 {
			t.Errorf("promote found %d jobs still scheduled", n)
		}
		got := mustAdmit(t, ctx, s, admitReq("w", 3))
		admitted := ids(got)
		slices.Sort(admitted)
		if want := []string{"later", "retried"}; !slices.Equal(admitted, want) {
			t.Fatalf("admitted %v, want %v", admitted, want)
		}
		for _, c := range got {
			if c.Envelope.ID == "later" && c.Envelope.PartitionKey != "t2" {
				t.Errorf("later admitted from partition %q, want t2", c.Envelope.PartitionKey)
			}
		}
	}},
	{"Edit/FieldsReadBack", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		p := job("p")
		p.Pending = true
		p.Tags = []string{"old"}
		mustEnqueue(t, ctx, s, p)
		at := epoch.Add(time.Hour)
		_, err := s.Edit(ctx, "p", headgate.JobEdit{Payload: new([]byte(`{"n":3}`)), MaxAttempts: new(7),
			Tags: new([]string{"x", "y"}), ScheduledAt: &at})
		if err != nil {
			t.Fatal(err)
		}
		j := getJob(t, ctx, s, "p")
		if j.State != headgate.StatePending || string(j.Payload) != `{"n":3}` || j.MaxAttempts != 7 ||
			!slices.Equal(j.Tags, []string{"x", "y"}) || !j.ScheduledAt.Equal(at) {
			t.Errorf("edited pending job: %+v", j)
		}
		// Released, it waits for the time the edit gave it.
		if _, err := s.ReleasePending(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		wantState(t, ctx, s, "p", headgate.StateScheduled)
		if _, err := s.Edit(ctx, "p", headgate.JobEdit{Tags: new([]string{})}); err != nil {
			t.Fatal(err)
		}
		if j := getJob(t, ctx, s, "p"); len(j.Tags) != 0 {
			t.Errorf("tags after clearing: %v", j.Tags)
		}
	}},
	{"Edit/Refused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("running"))
		admitOne(t, ctx, s)
		mustEnqueue(t, ctx, s, job("cancelled"))
		mustCancel(t, ctx, s, "cancelled")
		edit := headgate.JobEdit{Priority: new(int32(1))}
		err := unchanged(t, ctx, s, "edit running", func() error { _, err := s.Edit(ctx, "running", edit); return err })
		if e := wantErr[*headgate.JobRunningError](t, err); e != nil && e.JobID != "running" {
			t.Errorf("running error names %q", e.JobID)
		}
		err = unchanged(t, ctx, s, "edit finished", func() error { _, err := s.Edit(ctx, "cancelled", edit); return err })
		if e := wantErr[*headgate.NotEditableError](t, err); e != nil && e.State != headgate.StateCancelled {
			t.Errorf("not editable names state %s", e.State)
		}
		err = unchanged(t, ctx, s, "edit unknown", func() error { _, err := s.Edit(ctx, "nope", edit); return err })
		if !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("edit unknown: %v", err)
		}
	}},
	{"Edit/Corrupt/Available", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "q:default:")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, x, y := job("a"), job("x"), job("y")
				a.PartitionKey, x.PartitionKey, y.PartitionKey = "t1", "t1", "t1"
				mustEnqueue(t, ctx, s, a, x, y)
				mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
			},
			func(ctx context.Context, s *headgate.Store) error {
				_, err := s.Edit(ctx, "x", headgate.JobEdit{Priority: new(int32(3)), PartitionKey: new("t2")})
				return err
			},
			headgate.StateAvailable))
	}},
	{"Edit/Corrupt/Scheduled", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "scheduled", "q:default:counts")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				x, y := job("x"), job("y")
				x.ScheduledAt, y.ScheduledAt = epoch.Add(time.Hour), epoch.Add(time.Hour)
				mustEnqueue(t, ctx, s, x, y)
			},
			func(ctx context.Context, s *headgate.Store) error {
				at := epoch.Add(2 * time.Hour)
				_, err := s.Edit(ctx, "x", headgate.JobEdit{ScheduledAt: &at})
				return err
			},
			headgate.StateScheduled))
	}},
}

package rqueuetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// The operator verbs read the job, then the keys of the state it leaves and enters. Each
// corruption of each of those keys either refuses the call with nothing written or, for
// the job's own data, parks the job (the verb then returns *JobParkedError, which the
// harness counts as the call's success: it wrote the parking).
var operatorCorruptCases = []conformanceCase{
	{"Retry/Corrupt", func(t *testing.T, s *headgate.Store) {
		// y's partition is not the call's to touch: x is retried into partition t2.
		keys := keysNamed("job:x", "retained", "unique", "limits", "quarantine", "q:default:counts", "q:default:ring",
			"q:default:drr", "q:default:wake")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				x := job("x")
				x.UniqueKey = "u1"
				mustEnqueue(t, ctx, s, x, job("y"))
				if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 10); err != nil {
					t.Fatal(err)
				}
				mustCancel(t, ctx, s, "x")
			},
			func(ctx context.Context, s *headgate.Store) error {
				_, err := s.Retry(ctx, "x", &headgate.RetryOptions{Edit: &headgate.JobEdit{PartitionKey: new("t2")}})
				return err
			},
			headgate.StateAvailable))
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
	{"Delete/Corrupt/Available", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "unique", "q:default:")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, x, y := job("a"), job("x"), job("y")
				a.PartitionKey, x.PartitionKey, y.PartitionKey = "t1", "t1", "t1"
				x.UniqueKey = "u1"
				mustEnqueue(t, ctx, s, a, x, y)
				mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess, nil)
			},
			func(ctx context.Context, s *headgate.Store) error { _, err := s.Delete(ctx, "x"); return err },
			headgate.StateDeleted))
	}},
	{"Delete/Corrupt/Finished", func(t *testing.T, s *headgate.Store) {
		keys := keysNamed("job:x", "retained", "q:default:counts")
		assertCorruptionSafe(t, s, operatorCorruptCheck(keys,
			func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustEnqueue(t, ctx, s, job("x"), job("y"))
				mustCancel(t, ctx, s, "x")
			},
			func(ctx context.Context, s *headgate.Store) error { _, err := s.Delete(ctx, "x"); return err },
			headgate.StateDeleted))
	}},
}

// operatorCorruptCheck runs call (a verb on job "x" of the state setup builds) under each
// corruption keys selects; when the corrupted key is not x's own, x must end in want.
func operatorCorruptCheck(keys func(string) bool, setup func(t testing.TB, ctx context.Context, s *headgate.Store),
	call func(ctx context.Context, s *headgate.Store) error, want headgate.State) corruptCheck {
	// The numeric job fields the verbs read (JOB_FIELDS in lua/lib.lua); a bad weight,
	// which they do not read, leaves the job usable.
	read := []string{"prio", "sched", "ret", "uwin", "attempt", "maxa", "crash", "charge", "fence"}
	return corruptCheck{
		setup: setup,
		keys:  keys,
		call: func(ctx context.Context, s *headgate.Store) error {
			err := call(ctx, s)
			if p := (*headgate.JobParkedError)(nil); errors.As(err, &p) {
				return nil
			}
			return err
		},
		progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
			if corrupted != "job:x" {
				wantState(t, ctx, s, "x", want)
			}
		},
		mustPark: func(corrupted, field string) bool {
			return corrupted == "job:x" && (field == "" || slices.Contains(read, field))
		},
	}
}

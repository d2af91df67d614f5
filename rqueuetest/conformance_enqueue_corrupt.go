package rqueuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// enqueueCorruptCases corrupt each key an enqueue reads: the batch fails with nothing
// written, or it is written whole.
var enqueueCorruptCases = []conformanceCase{
	{"Enqueue/Corrupt", func(t *testing.T, s *headgate.Store) {
		old := job("old")
		old.UniqueKey = "u-old"
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 100); err != nil {
					t.Fatal(err)
				}
				tw := job("throttled")
				tw.UniqueKey, tw.UniqueWindow, tw.PartitionKey = "u-tw", time.Hour, "p"
				mustEnqueue(t, ctx, s, old, tw)
			},
			keys: keysNamed("job:", "queues", "scheduled", "unique", "throttle", "limits", "q:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				now, later := job("now"), job("later")
				now.PartitionKey, now.UniqueKey = "p", "u-now"
				later.ScheduledAt = epoch.Add(time.Hour)
				_, err := s.Enqueue(ctx, old, now, later)
				return err
			},
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, corrupted string) {
				wantState(t, ctx, s, "now", headgate.StateAvailable)
				wantState(t, ctx, s, "later", headgate.StateScheduled)
			},
		})
	}},
	{"Enqueue/CorruptHolder", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				h := job("holder")
				h.UniqueKey, h.PartitionKey = "u", "p"
				mustEnqueue(t, ctx, s, h)
			},
			keys: keysNamed("job:", "scheduled", "unique", "q:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				dup := job("dup")
				dup.UniqueKey, dup.PartitionKey, dup.Priority = "u", "p", 5
				dup.UniqueReplace = headgate.ReplacePriority
				_, err := s.Enqueue(ctx, dup)
				var de *headgate.DuplicateError
				if errors.As(err, &de) && de.Replaced {
					return nil
				}
				return err
			},
		})
	}},
}

package rqueuetest

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// promoteCases cover the Promote transition of the job contract.
var promoteCases = []conformanceCase{
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
		n, next, err = s.PromoteDue(ctx, 10)
		if err != nil || n != 1 || !next.Equal(b.ScheduledAt) {
			t.Errorf("promote at due: %d next %v, %v", n, next, err)
		}
		wantState(t, ctx, s, "a", headgate.StateAvailable)
		wantState(t, ctx, s, "b", headgate.StateScheduled)
	}},
	{"Corrupt/Promote", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				a, b, c := job("a"), job("b"), job("c")
				b.PartitionKey, c.StickyWorker = "t1", "w9"
				for _, e := range []*headgate.Envelope{&a, &b, &c} {
					e.ScheduledAt = epoch.Add(time.Second)
				}
				// d and e are available already, so their partitions, rings and the
				// wake list exist to be corrupted.
				d, e := job("d"), job("e")
				d.PartitionKey, e.StickyWorker = "t1", "w9"
				later := job("later")
				later.ScheduledAt = epoch.Add(time.Hour)
				mustEnqueue(t, ctx, s, a, b, c, d, e, later)
				advance(t, ctx, s, time.Second)
			},
			keys: func(name string) bool {
				return keysNamed("job:a", "job:b", "job:c", "scheduled", "q:")(name)
			},
			call: func(ctx context.Context, s *headgate.Store) error {
				_, _, err := s.PromoteDue(ctx, 10)
				return err
			},
			mustPark:   parksOn(loadJobNumbers...),
			progressed: othersIn(headgate.StateAvailable, "a", "b", "c"),
		})
	}},
}

package rqueuetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// bulkDeleteCases cover BulkDelete: a tenant's purge, age, refusals.
var bulkDeleteCases = []conformanceCase{
	{"BulkDelete/TenantPurge", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "gone", 1100, func(i int, e *headgate.Envelope) {
			e.PartitionKey = "tenant"
			if i%4 == 0 {
				e.ScheduledIn = time.Hour
			}
		})
		enqueueMany(t, ctx, s, "kept", 20, func(i int, e *headgate.Envelope) { e.PartitionKey = "other" })
		if _, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateScheduled,
			Partition: "tenant", Kind: "test:job"}, &headgate.BulkOptions{BatchSize: 100}); err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, st := range []headgate.State{headgate.StateAvailable, headgate.StateCancelled} {
			res, err := s.BulkDelete(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: st, Partition: "tenant"}, nil)
			if err != nil {
				t.Fatalf("BulkDelete %s: %v", st, err)
			}
			total += res.Moved
		}
		if total != 1100 {
			t.Errorf("deleted %d, want 1100", total)
		}
		counts, err := s.PartitionCounts(ctx, headgate.QueueDefault, "tenant")
		if err != nil || len(counts) != 0 {
			t.Errorf("counts of the purged tenant = %v, %v; want none", counts, err)
		}
		for _, line := range strings.Split(snapshot(t, ctx, s), "\n") {
			if strings.Contains(line, "gone-") {
				t.Errorf("a purged job is still in the store: %.200s", line)
			}
		}
		if n := countIn(t, ctx, s, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "other"}); n != 20 {
			t.Errorf("%d jobs of the other tenant, want 20", n)
		}
	}},
	{"BulkDelete/OlderThan", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("old"))
		advance(t, ctx, s, time.Hour)
		mustEnqueue(t, ctx, s, job("new"))
		res, err := s.BulkDelete(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable,
			OlderThan: 30 * time.Minute}, nil)
		if err != nil || res.Moved != 1 {
			t.Fatalf("BulkDelete older than 30m = %+v, %v", res, err)
		}
		wantState(t, ctx, s, "old", headgate.StateDeleted)
		wantState(t, ctx, s, "new", headgate.StateAvailable)
	}},
	{"BulkDelete/RunningRefused", func(t *testing.T, s *headgate.Store) {
		ctx, _ := heldJob(t, s)
		err := unchanged(t, ctx, s, "BulkDelete of running jobs", func() error {
			_, err := s.BulkDelete(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateRunning}, nil)
			return err
		})
		var inv *headgate.InvalidError
		if !errors.As(err, &inv) || inv.Field != "State" || !strings.Contains(err.Error(), "deleted") {
			t.Errorf("BulkDelete of running jobs: %v, want *InvalidError for State", err)
		}
	}},
}

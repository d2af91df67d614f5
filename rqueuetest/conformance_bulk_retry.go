package rqueuetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/headgate/headgate"
)

// bulkRetryCases cover BulkRetry: by kind, unique holders, backpressure.
var bulkRetryCases = []conformanceCase{
	// The batch writes each partition's jobs together: every retried job is admitted once,
	// the partitions in turn, the highest priority first within its partition.
	{"BulkRetry/PartitionsAdmitted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 1500, func(i int, e *headgate.Envelope) {
			e.PartitionKey = fmt.Sprint("p", i%3)
			if i == 1497 { // in p0
				e.Priority = 5
			}
		})
		if res, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil || res.Moved != 1500 {
			t.Fatalf("cancel all = %+v, %v", res, err)
		}
		if res, err := s.BulkRetry(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}, nil); err != nil || res.Moved != 1500 {
			t.Fatalf("BulkRetry = %+v, %v; want 1500", res, err)
		}
		seen := map[string]bool{}
		firstOf := map[string]string{} // partition -> its first job admitted
		var order []string             // partitions of the first three jobs admitted
		for len(seen) < 1500 {
			claims := mustAdmit(t, ctx, s, admitReq("w1", 100))
			if len(claims) == 0 {
				t.Fatalf("admitted %d of the 1500 retried jobs, then none", len(seen))
			}
			for _, c := range claims {
				id, part := c.Envelope.ID, c.Envelope.PartitionKey
				if seen[id] {
					t.Fatalf("%s admitted twice", id)
				}
				seen[id] = true
				if firstOf[part] == "" {
					firstOf[part] = id
				}
				if len(order) < 3 {
					order = append(order, part)
				}
			}
		}
		if len(firstOf) != 3 || order[0] == order[1] || order[1] == order[2] || order[0] == order[2] {
			t.Errorf("the first three jobs admitted came from partitions %v, want one of each", order)
		}
		if firstOf["p0"] != "j-01497" {
			t.Errorf("p0's first job admitted is %s, want j-01497 (priority 5)", firstOf["p0"])
		}
	}},
	// As Retry: a retried completed job's result goes with the run it was of.
	{"BulkRetry/CompletedResultGoes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		for range 2 {
			mustAck(t, ctx, s, admitOne(t, ctx, s), headgate.OutcomeSuccess,
				&headgate.AckOpts{Result: &headgate.Blob{SchemaVersion: 1, Bytes: []byte("first run")}})
		}
		if res, err := s.BulkRetry(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCompleted}, nil); err != nil || res.Moved != 2 {
			t.Fatalf("BulkRetry = %+v, %v; want 2 moved", res, err)
		}
		for _, id := range []string{"a", "b"} {
			if r, err := s.JobResult(ctx, id); err != nil || r != nil {
				t.Errorf("result of retried %s: %+v, %v; want none", id, r, err)
			}
		}
	}},
	{"BulkRetry/ByKindAndTag", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 1200, func(i int, e *headgate.Envelope) {
			e.Kind = "k:a"
			if i%3 == 0 {
				e.Kind = "k:b"
			}
			if i%2 == 0 {
				e.Tags = []string{"even"}
			}
		})
		if res, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil || res.Moved != 1200 {
			t.Fatalf("cancel all = %+v, %v", res, err)
		}
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled, Kind: "k:a", Tag: "even"}
		res, err := s.BulkRetry(ctx, f, nil)
		if err != nil || res.Moved != 400 || res.Cursor != "" {
			t.Fatalf("BulkRetry = %+v, %v; want 400", res, err)
		}
		f.State = headgate.StateAvailable
		if n := countIn(t, ctx, s, f); n != 400 {
			t.Errorf("%d available after the retry, want 400", n)
		}
		if n := countIn(t, ctx, s, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}); n != 800 {
			t.Errorf("%d still cancelled, want 800", n)
		}
		c := admitOne(t, ctx, s)
		if c.Envelope.Kind != "k:a" || c.Envelope.Attempt != 0 {
			t.Errorf("admitted %+v, want a retried k:a job from attempt 0", c.Envelope)
		}
	}},
	// A dry run counts what the run would do: its batches write nothing, so each would
	// otherwise meet the queue's limit as the first did, and the dry run count jobs the
	// run stops short of.
	{"BulkRetry/DryRunMeetsTheLimit", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 5, nil)
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}
		if _, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 3); err != nil {
			t.Fatal(err)
		}
		var dry headgate.BulkResult
		err := unchanged(t, ctx, s, "a dry run past the limit", func() error {
			var err error
			dry, err = s.BulkRetry(ctx, f, &headgate.BulkOptions{DryRun: true, BatchSize: 2})
			return err
		})
		var bp *headgate.BackpressureError
		if !errors.As(err, &bp) || dry.Moved != 2 || dry.Batches != 1 || bp.Current != 2 || bp.Incoming != 2 {
			t.Errorf("dry run in batches of 2 = %+v, %v; want 2 counted, then Backpressure 2 + 2 > 3", dry, err)
		}
		res, err := s.BulkRetry(ctx, f, &headgate.BulkOptions{BatchSize: 2})
		if !errors.As(err, &bp) || res.Moved != dry.Moved || res.Batches != dry.Batches || res.Cursor != dry.Cursor {
			t.Errorf("the run = %+v, %v; want what its dry run said: %+v", res, err, dry)
		}
	}},
	{"BulkRetry/UniqueHolderSkipped", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		a, b := job("a"), job("b")
		a.UniqueKey = "u"
		mustEnqueue(t, ctx, s, a, b)
		if _, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil {
			t.Fatal(err)
		}
		holder := job("holder")
		holder.UniqueKey = "u"
		mustEnqueue(t, ctx, s, holder)
		res, err := s.BulkRetry(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}, nil)
		if err != nil || res.Moved != 1 || res.Skipped != 1 {
			t.Fatalf("BulkRetry = %+v, %v; want b retried and a skipped", res, err)
		}
		wantState(t, ctx, s, "a", headgate.StateCancelled)
		wantState(t, ctx, s, "b", headgate.StateAvailable)
	}},
	{"BulkRetry/Backpressure", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 5, nil)
		if _, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, ctx, s, job("busy"))
		if err := s.SetEnqueueLimit(ctx, headgate.QueueDefault, 3); err != nil {
			t.Fatal(err)
		}
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}
		err := unchanged(t, ctx, s, "BulkRetry over the limit", func() error {
			_, err := s.BulkRetry(ctx, f, nil)
			return err
		})
		var bp *headgate.BackpressureError
		if !errors.As(err, &bp) || bp.Limit != 3 || bp.Current != 1 || bp.Incoming != 5 {
			t.Errorf("BulkRetry over the limit: %v, want Backpressure 3, 1 + 5", err)
		}
		// In batches that fit, the run goes as far as the limit lets it and can be resumed.
		res, err := s.BulkRetry(ctx, f, &headgate.BulkOptions{BatchSize: 2})
		if !errors.As(err, &bp) || res.Moved != 2 || res.Cursor == "" {
			t.Errorf("BulkRetry in batches of 2 = %+v, %v; want 2 retried, then Backpressure and a cursor", res, err)
		}
		var inv *headgate.InvalidError
		if _, err := s.BulkRetry(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); !errors.As(err, &inv) || inv.Field != "State" {
			t.Errorf("BulkRetry of available jobs: %v, want *InvalidError for State", err)
		}
	}},
}

package rqueuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

func mustCommit(t testing.TB, ctx context.Context, s *headgate.Store, c headgate.TaskCommit) *headgate.TaskCommitted {
	t.Helper()
	r, err := s.CommitWorkflowTask(ctx, c)
	if err != nil {
		t.Fatalf("commit %s: %v", c.WorkflowID, err)
	}
	return r
}

// readmitAfterLeaseLoss lets the lease of held expire, reclaims the job and admits it
// again from queue, under a new fence.
func readmitAfterLeaseLoss(t testing.TB, ctx context.Context, s *headgate.Store, held headgate.LeaseRef, queue string) headgate.Claim {
	t.Helper()
	advance(t, ctx, s, time.Hour)
	if _, err := s.ReclaimExpired(ctx, 10); err != nil {
		t.Fatal(err)
	}
	advance(t, ctx, s, time.Hour)
	mustPromote(t, ctx, s)
	fresh := admitOne(t, ctx, s, queue)
	if fresh.Envelope.ID != held.JobID || fresh.Fence == held.Fence {
		t.Fatalf("readmitted %s fence %d, the lost lease's job %s fence %d", fresh.Envelope.ID, fresh.Fence, held.JobID, held.Fence)
	}
	return fresh
}

// wfCommitTaskCases cover CommitWorkflowTask and FireTimers.
var wfCommitTaskCases = []conformanceCase{
	{"WfCommit/StaleWorkerRefused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		stale := task.LeaseRef()
		fresh := readmitAfterLeaseLoss(t, ctx, s, stale, "wf")
		c := headgate.TaskCommit{WorkflowID: "w", Lease: stale, ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowCompleted}}}
		err := unchanged(t, ctx, s, "stale commit", func() error {
			_, err := s.CommitWorkflowTask(ctx, c)
			return err
		})
		var rejected *headgate.LeaseRejectedError
		if !errors.As(err, &rejected) || rejected.JobID != stale.JobID {
			t.Errorf("stale commit: %v, want *LeaseRejectedError for %s", err, stale.JobID)
		}
		// The holder's commit at a head it did not read is refused too.
		c.Lease = fresh.LeaseRef()
		c.ExpectedHead, c.Events = 0, nil
		err = unchanged(t, ctx, s, "commit at a wrong head", func() error {
			_, err := s.CommitWorkflowTask(ctx, c)
			return err
		})
		var conflict *headgate.SequenceConflictError
		if !errors.As(err, &conflict) || conflict.Found != 1 {
			t.Errorf("commit at head 0: %v, want *SequenceConflictError found 1", err)
		}
		c.ExpectedHead, c.Events = 1, []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowCompleted}}
		mustCommit(t, ctx, s, c)
		if w, err := s.GetWorkflow(ctx, "w"); err != nil || w.Status != headgate.WorkflowCompleted {
			t.Errorf("after the holder's commit: %+v, %v", w, err)
		}
	}},
	{"WfCommit/CheckpointKeepsTheTask", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventStepCompleted, Name: "a#1"}}})
		if res.Head != 2 || res.NextTaskID != "" {
			t.Errorf("checkpoint: %+v", res)
		}
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateRunning)
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 2, End: true,
			Events: []headgate.Event{{Seq: 3, Kind: headgate.EventWorkflowCompleted, Result: []byte(`"ok"`)}}})
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateDeleted)
	}},
	{"WfCommit/ChildAndParent", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "p")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events:   []headgate.Event{{Seq: 2, Kind: headgate.EventChildStarted, Name: "c#1", ChildWorkflowID: "p/c#1"}},
			Children: []headgate.WorkflowStart{{WorkflowID: "p/c#1", WorkflowType: "t", RunID: "cr", Queue: "wf"}}})
		child := admitOne(t, ctx, s, "wf")
		if string(child.Envelope.Payload) != "p/c#1" {
			t.Fatalf("admitted %q, want the child's task", child.Envelope.Payload)
		}
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p/c#1", Lease: child.LeaseRef(), ExpectedHead: 1, End: true,
			Events:      []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowFailed, Error: &headgate.WorkflowError{Message: "boom"}}},
			ParentEvent: &headgate.Event{Kind: headgate.EventChildFailed, ChildWorkflowID: "p/c#1", Error: &headgate.WorkflowError{Message: "boom"}}})
		h := mustHistory(t, ctx, s, "p")
		if len(h) != 3 || h[2].Kind != headgate.EventChildFailed || h[2].Error == nil || h[2].Error.Message != "boom" {
			t.Fatalf("parent history %+v, want child_failed", h)
		}
		if next := admitOne(t, ctx, s, "wf"); string(next.Envelope.Payload) != "p" {
			t.Errorf("admitted %q, want the parent's next task", next.Envelope.Payload)
		}
	}},
}

package rqueuetest

import (
	"errors"
	"testing"

	"github.com/headgate/headgate"
)

// wfRetryCases cover RetryWorkflow.
var wfRetryCases = []conformanceCase{
	{"WfRetry/FromTheFailedStep", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		var closed *headgate.WorkflowClosedError
		if _, err := s.RetryWorkflow(ctx, "w"); !errors.As(err, &closed) || closed.Status != headgate.WorkflowRunning {
			t.Errorf("retry of a running workflow: %v", err)
		}
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventStepCompleted, Name: "a#1"},
				{Seq: 3, Kind: headgate.EventStepFailed, Name: "b#1", Attempt: 1, Error: &headgate.WorkflowError{Message: "x"}},
				{Seq: 4, Kind: headgate.EventWorkflowFailed, Error: &headgate.WorkflowError{Message: "x"}}}})
		tid, err := s.RetryWorkflow(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		h := mustHistory(t, ctx, s, "w")
		if len(h) != 2 || h[1].Name != "a#1" {
			t.Errorf("history after retry %+v, want up to step a", h)
		}
		w, err := s.GetWorkflow(ctx, "w")
		if err != nil || w.Status != headgate.WorkflowRunning || w.Head != 2 || !w.ClosedAt.IsZero() {
			t.Errorf("row after retry %+v, %v", w, err)
		}
		runs, err := s.ReadRunChain(ctx, "w")
		if err != nil || len(runs) != 1 || runs[0].Status != headgate.WorkflowRunning {
			t.Errorf("run chain %+v, %v", runs, err)
		}
		wantState(t, ctx, s, tid, headgate.StateAvailable)
	}},
}

package rqueuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfTerminateCases cover TerminateWorkflow.
var wfTerminateCases = []conformanceCase{
	{"WfTerminate/RunningTaskRefused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1,
			Events:    []headgate.Event{{Seq: 2, Kind: headgate.EventTimerStarted, Name: "s#1", TimerID: "sleep/s#1"}},
			ArmTimers: []headgate.TimerArm{{TimerID: "sleep/s#1", FireAt: epoch.Add(time.Hour), ArmedSeq: 2}}})
		if err := s.SignalWorkflow(ctx, "w", "go", nil); err != nil { // into the inbox
			t.Fatal(err)
		}
		if err := s.TerminateWorkflow(ctx, "w", "stuck", "ops"); err != nil {
			t.Fatal(err)
		}
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateDeleted)
		_, err := s.CommitWorkflowTask(ctx, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 2, End: true})
		var rejected *headgate.LeaseRejectedError
		if !errors.As(err, &rejected) {
			t.Errorf("the terminated task's commit: %v, want *LeaseRejectedError", err)
		}
		h := mustHistory(t, ctx, s, "w")
		if len(h) != 3 || h[2].Kind != headgate.EventWorkflowTerminated {
			t.Errorf("history %+v, want workflow_terminated last and the inbox dropped", h)
		}
		if got := mustExpired(t, ctx, s, epoch.Add(2*time.Hour), 10); len(got) != 0 {
			t.Errorf("timers left armed: %+v", got)
		}
		var closed *headgate.WorkflowClosedError
		if err := s.TerminateWorkflow(ctx, "w", "", ""); !errors.As(err, &closed) || closed.Status != headgate.WorkflowTerminated {
			t.Errorf("terminate again: %v", err)
		}
		if err := s.TerminateWorkflow(ctx, "nobody", "", ""); !errors.Is(err, headgate.ErrWorkflowNotFound) {
			t.Errorf("terminate of no workflow: %v", err)
		}
	}},
}

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
	{"WfTerminate/DropsWaitingStepJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs, claims := twoOfThreeStepsRunning(t, ctx, s, "w")
		// b fails and waits for its retry, a step job due in a minute.
		retry, err := s.CommitWorkflowStep(ctx, failedWithRetry("w", "b#1", claims[1].LeaseRef(), epoch.Add(time.Minute)))
		if err != nil || retry.RetryJobID == "" {
			t.Fatalf("b's failed attempt: %+v, %v", retry, err)
		}
		if err := s.TerminateWorkflow(ctx, "w", "stuck", "op"); err != nil {
			t.Fatal(err)
		}
		wantState(t, ctx, s, stepIDs[0], headgate.StateRunning) // its holder learns at its commit
		wantState(t, ctx, s, retry.RetryJobID, headgate.StateDeleted)
		wantState(t, ctx, s, stepIDs[2], headgate.StateDeleted)
		wantNoStepWaits(t, ctx, s, "w")
		checkCounts(t, s)
		err = unchanged(t, ctx, s, "the running step job's commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "a#1", claims[0].LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the run is terminated" {
			t.Errorf("the running step job's commit: %v, want *StepNotPendingError: the run is terminated", err)
		}
		if _, err := s.Ack(ctx, claims[0].LeaseRef(), headgate.OutcomeSkip, &headgate.AckOpts{Error: "the run is terminated"}); err != nil {
			t.Fatalf("the running step job ends without effect: %v", err)
		}
		wantNothingToAdmit(t, ctx, s, "after terminate", "steps")
		checkCounts(t, s)
	}},
}

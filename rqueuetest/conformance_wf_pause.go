package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

func wantPause(t testing.TB, what string, got headgate.WorkflowPauseResult, err error, want headgate.WorkflowPauseResult) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s: %s, %v; want %s", what, got, err, want)
	}
}

// wfPauseCases cover PauseWorkflow (lua/wf_pause.lua).
var wfPauseCases = []conformanceCase{
	{"WfPause/StagesTheWaitingTask", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		r, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", Queue: "wf"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.PauseWorkflow(ctx, "w", "deploy", "ops")
		wantPause(t, "pause", got, err, headgate.PauseApplied)
		wantState(t, ctx, s, r.TaskID, headgate.StatePending)
		if claims := mustAdmit(t, ctx, s, admitReq("w1", 10, "wf")); len(claims) != 0 {
			t.Errorf("admitted a paused run's task: %v", ids(claims))
		}
		if got := listPaused(t, ctx, s); !slices.Equal(got, []string{"w"}) {
			t.Errorf("ListPaused = %v", got)
		}
		got, err = s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause again", got, err, headgate.PauseUnchanged)
		h := mustHistory(t, ctx, s, "w")
		if last := h[len(h)-1]; last.Kind != headgate.EventWorkflowPaused || last.Reason != "deploy" || last.Operator != "ops" {
			t.Errorf("last event %+v, want workflow_paused by ops", last)
		}
	}},
	{"WfPause/WhileTheTaskRuns", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		got, err := s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause while running", got, err, headgate.PauseRequested)
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true})
		if res.NextTaskID == "" {
			t.Fatal("no next task after the pause in the inbox")
		}
		wantState(t, ctx, s, res.NextTaskID, headgate.StatePending)
		if w, err := s.GetWorkflow(ctx, "w"); err != nil || w.Status != headgate.WorkflowPaused {
			t.Errorf("after the commit: %+v, %v; want paused", w, err)
		}
		// Resume makes the staged task available.
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume", got, err, headgate.PauseApplied)
		wantState(t, ctx, s, res.NextTaskID, headgate.StateAvailable)
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume again", got, err, headgate.PauseUnchanged)
	}},
	{"WfPause/RepeatedWhileTheTaskRuns", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		got, err := s.PauseWorkflow(ctx, "w", "first", "")
		wantPause(t, "pause while running", got, err, headgate.PauseRequested)
		got, err = s.PauseWorkflow(ctx, "w", "second", "")
		wantPause(t, "pause again while it waits", got, err, headgate.PauseUnchanged)
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume while the pause waits", got, err, headgate.PauseRequested)
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume again while it waits", got, err, headgate.PauseUnchanged)
		got, err = s.PauseWorkflow(ctx, "w", "third", "")
		wantPause(t, "pause after the resume", got, err, headgate.PauseRequested)
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true})
		var got3 []string
		for _, e := range mustHistory(t, ctx, s, "w") {
			if e.Kind == headgate.EventWorkflowPaused || e.Kind == headgate.EventWorkflowResumed {
				got3 = append(got3, string(e.Kind)+":"+e.Reason)
			}
		}
		want := []string{"workflow_paused:first", "workflow_resumed:", "workflow_paused:third"}
		if !slices.Equal(got3, want) {
			t.Errorf("pause and resume events %v, want %v", got3, want)
		}
		wantState(t, ctx, s, res.NextTaskID, headgate.StatePending)
		// The commit emptied the inbox: the run's status answers now.
		got, err = s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause of the paused run", got, err, headgate.PauseUnchanged)
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume after the commit", got, err, headgate.PauseApplied)
		wantState(t, ctx, s, res.NextTaskID, headgate.StateAvailable)
		got, err = s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause of the resumed run", got, err, headgate.PauseApplied)
	}},
	{"WfPause/HoldsStepJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs, claims := twoOfThreeStepsRunning(t, ctx, s, "w")
		due := epoch.Add(48 * time.Hour)
		retry, err := s.CommitWorkflowStep(ctx, failedWithRetry("w", "b#1", claims[1].LeaseRef(), due))
		if err != nil || retry.RetryJobID == "" {
			t.Fatalf("b's failed attempt: %+v, %v", retry, err)
		}
		got, err := s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause", got, err, headgate.PauseApplied)
		wantState(t, ctx, s, stepIDs[0], headgate.StateRunning) // a running step job finishes
		wantState(t, ctx, s, retry.RetryJobID, headgate.StatePending)
		wantState(t, ctx, s, stepIDs[2], headgate.StatePending)
		checkCounts(t, s)
		// a's commit while the run is paused is taken; the task it brings is staged.
		res, err := s.CommitWorkflowStep(ctx, completed("w", "a#1", claims[0].LeaseRef()))
		if err != nil || res.NextTaskID == "" {
			t.Fatalf("a's commit while paused: %+v, %v", res, err)
		}
		wantState(t, ctx, s, res.NextTaskID, headgate.StatePending)
		wantNothingToAdmit(t, ctx, s, "while paused", "steps")
		checkCounts(t, s)

		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume", got, err, headgate.PauseApplied)
		wantState(t, ctx, s, stepIDs[2], headgate.StateAvailable)
		wantState(t, ctx, s, res.NextTaskID, headgate.StateAvailable)
		// The retry's backoff still runs: it is due when it was.
		if j := getJob(t, ctx, s, retry.RetryJobID); j.State != headgate.StateScheduled || !j.ScheduledAt.Equal(due) {
			t.Errorf("the retry after resume: %s at %s, want scheduled at %s", j.State, j.ScheduledAt, due)
		}
		checkCounts(t, s)
		if c := admitOne(t, ctx, s, "steps"); c.Envelope.ID != stepIDs[2] {
			t.Errorf("admitted %s after resume, want c's step job %s", c.Envelope.ID, stepIDs[2])
		}
		checkCounts(t, s)
	}},
	{"WfPause/WhileTheTaskRunsHoldsStepJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "a#1")
		if err := s.SignalWorkflow(ctx, "w", "go", nil); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf")
		got, err := s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause while the task runs", got, err, headgate.PauseRequested)
		wantState(t, ctx, s, stepIDs[0], headgate.StateAvailable) // the pause waits for the commit
		// The commit applies the pause: the waiting step job and the one it sends are staged.
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 3, End: true,
			Events:   []headgate.Event{{Seq: 4, Kind: headgate.EventStepScheduled, Name: "b#1", Attempt: 1, Queue: "steps"}},
			StepJobs: []headgate.StepJob{{Step: "b#1", Queue: "steps"}}})
		if w, err := s.GetWorkflow(ctx, "w"); err != nil || w.Status != headgate.WorkflowPaused {
			t.Fatalf("after the commit: %+v, %v; want paused", w, err)
		}
		wantState(t, ctx, s, stepIDs[0], headgate.StatePending)
		wantState(t, ctx, s, res.StepJobIDs[0], headgate.StatePending)
		if claims := mustAdmit(t, ctx, s, admitReq("w1", 10, "steps")); len(claims) != 0 {
			t.Errorf("admitted a paused run's step jobs: %v", ids(claims))
		}
		checkCounts(t, s)
		// Terminating the paused run drops its staged step jobs.
		if err := s.TerminateWorkflow(ctx, "w", "", ""); err != nil {
			t.Fatal(err)
		}
		wantState(t, ctx, s, stepIDs[0], headgate.StateDeleted)
		wantState(t, ctx, s, res.StepJobIDs[0], headgate.StateDeleted)
		wantNoStepWaits(t, ctx, s, "w")
		checkCounts(t, s)
	}},
}

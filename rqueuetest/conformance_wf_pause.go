package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

func wantPause(t testing.TB, what string, got headgate.WorkflowPauseResult, err error, want headgate.WorkflowPauseResult) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s: %s, %v; want %s", what, got, err, want)
	}
}

// wfPauseCases cover PauseWorkflow.
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
		if got := listPaused(t, ctx, s); !equalStrings(got, []string{"w"}) {
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
}

// wfResumeCases cover ResumeWorkflow of a run without a task.
var wfResumeCases = []conformanceCase{
	{"WfResume/EnqueuesATask", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true})
		got, err := s.PauseWorkflow(ctx, "w", "", "")
		wantPause(t, "pause", got, err, headgate.PauseApplied)
		got, err = s.ResumeWorkflow(ctx, "w", "", "")
		wantPause(t, "resume", got, err, headgate.PauseApplied)
		if c := admitOne(t, ctx, s, "wf"); string(c.Envelope.Payload) != "w" {
			t.Errorf("admitted %q after the resume, want w's task", c.Envelope.Payload)
		}
	}},
}

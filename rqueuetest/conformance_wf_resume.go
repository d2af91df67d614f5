package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// wfResumeCases cover ResumeWorkflow (lua/wf_resume.lua) of a run without a task.
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

package rqueuetest

import (
	"context"
	"testing"

	"github.com/headgate/headgate"
)

// wfStartCases cover StartWorkflow (lua/wf_start.lua): a run and its first task, once per
// workflow id.
var wfStartCases = []conformanceCase{
	{"WfStart/FirstTaskAndIdempotence", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		r, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-1", WorkflowType: "checkout", RunID: "r1",
			Queue: "wf", Partition: "tenant-1", Input: []byte(`{"n":1}`)})
		if err != nil || !r.Started || r.TaskID == "" {
			t.Fatalf("start: %+v, %v", r, err)
		}
		task := getJob(t, ctx, s, r.TaskID)
		if task.Kind != "workflow:checkout" || task.Queue != "wf" || task.PartitionKey != "tenant-1" ||
			task.State != headgate.StateAvailable || string(task.Payload) != "o-1" {
			t.Errorf("first task %+v", task.Envelope)
		}
		again, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-1", WorkflowType: "checkout", RunID: "r2", Queue: "wf"})
		if err != nil || again.Started || again.RunID != "r1" || again.Status != headgate.WorkflowRunning {
			t.Errorf("second start: %+v, %v; want the existing run r1", again, err)
		}
		if h := mustHistory(t, ctx, s, "o-1"); len(h) != 1 || h[0].Kind != headgate.EventWorkflowStarted {
			t.Errorf("history after two starts: %+v", h)
		}
		if v, err := s.GetVisibility(ctx, "o-1"); err != nil || v.Status != headgate.WorkflowRunning {
			t.Errorf("visibility %+v, %v", v, err)
		}
	}},
}

// startRun starts a run of type t on queue q and admits its first task.
func startRun(t testing.TB, ctx context.Context, s *headgate.Store, id string) headgate.Claim {
	t.Helper()
	r, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: id, WorkflowType: "t", RunID: "r1", Queue: "wf"})
	if err != nil || !r.Started {
		t.Fatalf("start %s: %+v, %v", id, r, err)
	}
	return admitOne(t, ctx, s, "wf")
}

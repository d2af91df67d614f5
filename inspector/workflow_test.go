package inspector_test

import (
	"errors"
	"testing"

	"github.com/headgate/headgate"
)

func TestWorkflowVerbs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.store.StartWorkflow(b.ctx, headgate.WorkflowStart{WorkflowID: "w-1", WorkflowType: "t"}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.insp.PauseWorkflow(b.ctx, "w-1", "deploy"); err != nil || r != headgate.PauseApplied {
		t.Fatalf("pause: %s, %v", r, err)
	}
	ids, _, err := b.insp.PausedWorkflows(b.ctx, "", 10)
	if err != nil || len(ids) != 1 || ids[0] != "w-1" {
		t.Fatalf("paused workflows %v, %v", ids, err)
	}
	if r, err := b.insp.ResumeWorkflow(b.ctx, "w-1", ""); err != nil || r != headgate.PauseApplied {
		t.Fatalf("resume: %s, %v", r, err)
	}
	if err := b.insp.SignalWorkflow(b.ctx, "w-1", "go", []byte(`true`)); err != nil {
		t.Fatal(err)
	}
	if requested, err := b.insp.CancelWorkflow(b.ctx, "w-1", "no longer needed"); err != nil || !requested {
		t.Fatalf("cancel: %t, %v", requested, err)
	}
	if err := b.insp.TerminateWorkflow(b.ctx, "w-1", "stuck"); err != nil {
		t.Fatal(err)
	}
	w, err := b.insp.Workflow(b.ctx, "w-1")
	if err != nil || w.Status != headgate.WorkflowTerminated {
		t.Fatalf("workflow %+v, %v; want terminated", w, err)
	}
	h, err := b.insp.WorkflowHistory(b.ctx, "w-1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []headgate.EventKind
	for _, e := range h {
		kinds = append(kinds, e.Kind)
	}
	want := []headgate.EventKind{headgate.EventWorkflowStarted, headgate.EventWorkflowPaused, headgate.EventWorkflowResumed,
		headgate.EventSignalReceived, headgate.EventWorkflowCancelRequested, headgate.EventWorkflowTerminated}
	if len(kinds) != len(want) {
		t.Fatalf("history %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("history %v, want %v", kinds, want)
		}
	}
	var closed *headgate.WorkflowClosedError
	if _, err := b.insp.RetryWorkflow(b.ctx, "w-1"); !errors.As(err, &closed) {
		t.Errorf("retry of a terminated run: %v, want *WorkflowClosedError", err)
	}
}

package headgate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headgate/headgate/internal/redistest"
)

// TestCommitWorkflowStepRefusesBadInput: a step commit, and a task commit's step jobs,
// that the store cannot take are refused before any call, naming the field.
func TestCommitWorkflowStepRefusesBadInput(t *testing.T) {
	s, _ := frozenStore(t, redistest.Miniredis(t))
	ctx := context.Background()
	lease := LeaseRef{JobID: "wfs:w:1", LeaseID: "l", Fence: 1}
	done := Event{Kind: EventStepCompleted, Name: "pay#1", Attempt: 1}
	failed := Event{Kind: EventStepFailed, Name: "pay#1", Attempt: 1}
	again := Event{Kind: EventStepScheduled, Name: "pay#1", Attempt: 2}
	retry := &StepJob{Step: "pay#1", Queue: "steps"}
	for _, c := range []struct {
		name  string
		c     StepCommit
		field string
	}{
		{"no run", StepCommit{WorkflowID: "w", Step: "pay#1", Lease: lease, Events: []Event{done}}, "RunID"},
		{"no events", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease}, "Events"},
		{"retry without its schedule", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{failed}, Retry: retry}, "Events"},
		{"schedule without a retry", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{failed, again}}, "Events"},
		{"another step's event", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{{Kind: EventStepCompleted, Name: "refund#1"}}}, "Events[0].Name"},
		{"another step's retry", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{failed, again}, Retry: &StepJob{Step: "refund#1"}}, "Retry.Step"},
		{"a queue with a colon", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{failed, again}, Retry: &StepJob{Step: "pay#1", Queue: "a:b"}}, "Retry.Queue"},
		{"a weight too heavy", StepCommit{WorkflowID: "w", RunID: "r", Step: "pay#1", Lease: lease,
			Events: []Event{failed, again}, Retry: &StepJob{Step: "pay#1", Weight: MaxWeight + 1}}, "Retry.Weight"},
	} {
		_, err := s.CommitWorkflowStep(ctx, c.c)
		if iv, ok := errors.AsType[*InvalidError](err); !ok || iv.Field != c.field {
			t.Errorf("%s: %v, want an *InvalidError on %s", c.name, err, c.field)
		}
	}
	_, err := s.CommitWorkflowTask(ctx, TaskCommit{WorkflowID: "w", Lease: lease, ExpectedHead: 1,
		StepJobs: []StepJob{{Step: "pay#1", Partition: "{x}"}}})
	if iv, ok := errors.AsType[*InvalidError](err); !ok || iv.Field != "StepJobs[0].Partition" || !strings.Contains(iv.Reason, "brace") {
		t.Errorf("task commit of a step job with a brace: %v, want an *InvalidError on StepJobs[0].Partition", err)
	}
	_, err = s.CommitWorkflowTask(ctx, TaskCommit{WorkflowID: "w", Lease: lease, ExpectedHead: 1, GiveUpSteps: []string{""}})
	if iv, ok := errors.AsType[*InvalidError](err); !ok || iv.Field != "GiveUpSteps[0]" {
		t.Errorf("task commit giving up an empty step: %v, want an *InvalidError on GiveUpSteps[0]", err)
	}
}

package headgate

import "context"

// ResumeWorkflow resumes a paused run: a workflow_resumed event, and its staged task is
// made available (one is enqueued when it has none). A run that is not paused is left
// alone (PauseUnchanged).
func (s *Store) ResumeWorkflow(ctx context.Context, workflowID, reason, operator string) (WorkflowPauseResult, error) {
	return s.pauseOrResume(ctx, scriptWfResume, workflowID, Event{Kind: EventWorkflowResumed, Reason: reason, Operator: operator})
}

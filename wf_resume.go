package headgate

import "context"

// ResumeWorkflow resumes a paused run: a workflow_resumed event, and its staged task is
// made available (one is enqueued when it has none), and so are its staged step jobs (a
// retry still in its backoff is scheduled for when it was due). A run that is neither
// paused nor has a pause waiting, or whose resume waits already, is left alone
// (PauseUnchanged).
func (s *Store) ResumeWorkflow(ctx context.Context, workflowID, reason, operator string) (WorkflowPauseResult, error) {
	return s.pauseOrResume(ctx, scriptWfResume, workflowID, Event{Kind: EventWorkflowResumed, Reason: reason, Operator: operator})
}

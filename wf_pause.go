package headgate

import "context"

// WorkflowPauseResult says what PauseWorkflow or ResumeWorkflow did.
type WorkflowPauseResult string

const (
	// PauseApplied: the run is paused (resumed) now.
	PauseApplied WorkflowPauseResult = "applied"
	// PauseRequested: the run's task is running; the pause (resume) waits in its inbox
	// and takes effect when that task commits.
	PauseRequested WorkflowPauseResult = "requested"
	// PauseUnchanged: the run was paused already, or its pause was requested already
	// (was not paused, nor its pause requested); nothing was written.
	PauseUnchanged WorkflowPauseResult = "unchanged"
)

var pauseReplies = map[string]WorkflowPauseResult{"paused": PauseApplied, "resumed": PauseApplied,
	"requested": PauseRequested, "already": PauseUnchanged, "not_paused": PauseUnchanged}

// PauseWorkflow pauses a workflow's open run: a workflow_paused event (reason and
// operator recorded), and its tasks and the step jobs its steps wait for are staged,
// not admitted, until ResumeWorkflow; ListPaused lists it. Timers still fire and signals
// still arrive meanwhile; the run takes them when it resumes. A task running at the time
// finishes first (PauseRequested), and so does a step job already running. A repeated
// pause, while the run is paused or its pause waits, writes nothing (PauseUnchanged).
// An id without a history is ErrWorkflowNotFound, a closed run *WorkflowClosedError.
func (s *Store) PauseWorkflow(ctx context.Context, workflowID, reason, operator string) (WorkflowPauseResult, error) {
	return s.pauseOrResume(ctx, scriptWfPause, workflowID, Event{Kind: EventWorkflowPaused, Reason: reason, Operator: operator})
}

func (s *Store) pauseOrResume(ctx context.Context, sc script, workflowID string, e Event) (WorkflowPauseResult, error) {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return "", err
	}
	body, err := encodeEvent(e)
	if err != nil {
		return "", err
	}
	reply, err := s.run(ctx, sc, workflowID, workflowID, body)
	if err != nil {
		return "", err
	}
	return pauseReplies[asString(reply, 0)], nil
}

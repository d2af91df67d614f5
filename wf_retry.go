package headgate

import (
	"context"
	"fmt"
)

// RetryWorkflow retries a failed run from its last good point: the events from the
// first step that failed for good on (or, when no step did, the workflow_failed event)
// are removed from the history, the run is open again, and a task replays the kept
// history and runs the code on from there, the failed step with fresh attempts. It
// returns the new task's job id. A run that did not fail is *WorkflowClosedError (its
// Status says what it is), an id without a history ErrWorkflowNotFound, a history that
// moved meanwhile *SequenceConflictError.
func (s *Store) RetryWorkflow(ctx context.Context, workflowID string) (string, error) {
	row, err := s.GetWorkflow(ctx, workflowID)
	if err != nil {
		return "", err
	}
	if row.Status != WorkflowFailed {
		return "", &WorkflowClosedError{WorkflowID: workflowID, Status: row.Status}
	}
	from := max(row.RunStartSeq, 1)
	if row.Head-from >= maxPage {
		from = row.Head - maxPage + 1
	}
	events, _, err := s.ReadHistoryFrom(ctx, workflowID, from, maxPage)
	if err != nil {
		return "", err
	}
	cut := int64(0)
	for _, e := range events {
		if cut == 0 && e.Kind == EventStepFailed && e.FireAt.IsZero() {
			cut = e.Seq // the first step that failed for good
		}
		if e.Kind == EventWorkflowFailed && cut == 0 {
			cut = e.Seq
		}
	}
	if cut == 0 {
		return "", fmt.Errorf("headgate: workflow %q: no workflow_failed event in its last %d events", workflowID, maxPage)
	}
	reply, err := s.run(ctx, scriptWfRetry, workflowID, workflowID, row.Head, cut)
	if err != nil {
		return "", err
	}
	return asString(reply, 1), nil
}

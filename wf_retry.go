package headgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RetryWorkflow retries a failed run from its last good point: the events from the
// first attempt of the first step that failed for good and that the code did not go on
// from (no step of its scope completed after it; when the code went on from every
// failure, the last one) on (or, when no step did, from
// the workflow_failed event) are removed from the history, the run is open again, and a
// task replays the kept history and runs the code on from there, the failed step with
// fresh attempts. What came from outside in the removed span and the code still waits
// for is kept, appended after the kept history in the order it came: signals, children's
// ends, and the firing of timers armed before the cut (a cancel request that reached
// the run as it failed is not: the retry is the newer word). It returns the new task's
// job id. A run that did not fail is *WorkflowClosedError (its Status says what it is),
// an id without a history ErrWorkflowNotFound, a history that moved meanwhile
// *SequenceConflictError.
func (s *Store) RetryWorkflow(ctx context.Context, workflowID string) (string, error) {
	row, err := s.GetWorkflow(ctx, workflowID)
	if err != nil {
		return "", err
	}
	if row.Status != WorkflowFailed {
		return "", &WorkflowClosedError{WorkflowID: workflowID, Status: row.Status, retry: true}
	}
	from := max(row.RunStartSeq, 1)
	if row.Head-from >= maxPage {
		from = row.Head - maxPage + 1
	}
	events, _, err := s.ReadHistoryFrom(ctx, workflowID, from, maxPage)
	if err != nil {
		return "", err
	}
	cut, keep := retryCut(events)
	if cut == 0 {
		return "", fmt.Errorf("headgate: workflow %q: no workflow_failed event in its last %d events", workflowID, maxPage)
	}
	args := []any{workflowID, row.Head, cut}
	for _, seq := range keep {
		args = append(args, seq)
	}
	reply, err := s.run(ctx, scriptWfRetry, workflowID, args...)
	if closed := (*WorkflowClosedError)(nil); errors.As(err, &closed) {
		closed.retry = true // the run moved on since it was read
	}
	if err != nil {
		return "", err
	}
	return asString(reply, 1), nil
}

// failedStep returns the step whose failure a retry runs again (see retryCut), or ""
// when no step failed for good: the first step that failed for good and that no step
// of its scope completed after, since a step that completed after a failure means the
// code went on past it (it handled the error); when every failure was gone on from,
// the last one (the code compensated for it and failed). A retry that cut at a failure
// the code went on from would run the steps that completed since again.
func failedStep(events []Event) string {
	last := ""
	for i, e := range events {
		if e.Kind != EventStepFailed || !e.FireAt.IsZero() {
			continue
		}
		last = e.Name
		scope := stepScope(e.Name)
		goneOn := false
		for _, l := range events[i+1:] {
			if l.Kind == EventStepCompleted && l.Name != e.Name && stepScope(l.Name) == scope {
				goneOn = true
				break
			}
		}
		if !goneOn {
			return e.Name
		}
	}
	return last
}

// stepScope is the scope of a step's key ("fan#1[0]/square#1"): up to its last '/'.
func stepScope(key string) string { return key[:strings.LastIndexByte(key, '/')+1] }

// retryCut returns where a retry cuts the failed run's events (a page of its history
// that ends at the head): the seq of the first attempt of the step that failed for good
// and that the code did not go on from (failedStep), else of the workflow_failed event;
// 0 when neither is in the page. keep lists the seqs past the cut that came from
// outside and stay.
func retryCut(events []Event) (cut int64, keep []int64) {
	failed := failedStep(events)
	for _, e := range events {
		isStep := e.Kind == EventStepScheduled || e.Kind == EventStepFailed || e.Kind == EventStepCompleted
		if failed != "" && isStep && e.Name == failed {
			// Its first attempt (the page's earliest, in a run longer than the page): the
			// retry gives it fresh attempts.
			cut = e.Seq
			break
		}
		if failed == "" && e.Kind == EventWorkflowFailed {
			cut = e.Seq
			break
		}
	}
	if cut == 0 {
		return 0, nil
	}
	armedAfter := map[string]bool{} // timers that removed events armed: their firing goes too
	for _, e := range events {
		if e.Seq < cut {
			continue
		}
		switch e.Kind {
		case EventTimerStarted:
			armedAfter[e.TimerID] = true
		case EventStepFailed: // a step run in the task waits for its retry on a timer
			if !e.FireAt.IsZero() {
				armedAfter[fmt.Sprintf("retry/%s/%d", e.Name, e.Attempt)] = true
			}
		}
	}
	for _, e := range events {
		if e.Seq <= cut {
			continue
		}
		switch e.Kind {
		case EventSignalReceived, EventChildCompleted, EventChildFailed:
			keep = append(keep, e.Seq)
		case EventTimerFired:
			if !armedAfter[e.TimerID] {
				keep = append(keep, e.Seq)
			}
		}
	}
	return cut, keep
}

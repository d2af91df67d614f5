package headgate

import (
	"context"
	"fmt"
)

// Append adds events to a workflow's history when its head is expectedSeq (0 for a new
// history): the events must be numbered expectedSeq+1, expectedSeq+2, ... A head other
// than expectedSeq is *SequenceConflictError, misnumbered events *SequenceGapError;
// either way nothing is written. An empty append only checks the head.
//
// The workflow's row (head, status derived from the workflow_* events, type, run,
// parent, package version) and its run chain move in the same script, so listings read
// rows and never fold a history.
func (s *Store) Append(ctx context.Context, workflowID string, events []Event, expectedSeq int64) error {
	args, err := appendArgs(workflowID, events, expectedSeq)
	if err != nil {
		return err
	}
	if _, err = s.run(ctx, scriptWfAppend, workflowID, args...); err != nil {
		return err
	}
	if len(events) > 0 {
		s.markFormat(ctx) // a history is data another format would misread, as jobs are
	}
	return nil
}

func appendArgs(workflowID string, events []Event, expectedSeq int64) ([]any, error) {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return nil, err
	}
	if expectedSeq < 0 {
		return nil, invalid("expectedSeq", "is negative (%d)", expectedSeq)
	}
	if len(events) > MaxAppendEvents {
		return nil, invalid("events", "%d events are more than %d", len(events), MaxAppendEvents)
	}
	args := make([]any, 0, 3+9*len(events))
	args = append(args, workflowID, expectedSeq, len(events))
	for i, e := range events {
		if want := expectedSeq + 1 + int64(i); e.Seq != want {
			return nil, &SequenceGapError{WorkflowID: workflowID, Index: i, Want: want, Got: e.Seq}
		}
		field := fmt.Sprintf("events[%d]", i)
		if err := validateEvent(field, e); err != nil {
			return nil, err
		}
		body, err := encodeEvent(e)
		if err != nil {
			return nil, fmt.Errorf("headgate: encode %s: %w", field, err)
		}
		var at int64
		if !e.RecordedAt.IsZero() {
			at = e.RecordedAt.UnixMilli()
		}
		args = append(args, e.Seq, string(e.Kind), at, body)
		if e.Kind == EventWorkflowStarted {
			args = append(args, e.WorkflowType, e.RunID, e.ParentWorkflowID, e.ParentRunID, e.PackageVersion)
		} else {
			args = append(args, "", "", "", "", "")
		}
	}
	return args, nil
}

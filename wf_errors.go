package headgate

import (
	"errors"
	"fmt"
)

// ErrWorkflowNotFound is returned when a workflow id has no history (or no visibility
// row, for the visibility reads).
var ErrWorkflowNotFound = errors.New("headgate: workflow not found")

// SequenceConflictError: the history's head was not the sequence the caller expected,
// so another writer appended first. Nothing was written; re-read the history and decide
// again.
type SequenceConflictError struct {
	WorkflowID string
	Expected   int64
	Found      int64
}

func (e *SequenceConflictError) Error() string {
	return fmt.Sprintf("headgate: workflow %q: expected head %d, found %d; re-read the history and retry",
		e.WorkflowID, e.Expected, e.Found)
}

// SequenceGapError: the events of an append were not numbered expected+1, expected+2,
// ... Nothing was written.
type SequenceGapError struct {
	WorkflowID string
	Index      int   // the first event out of place
	Want       int64 // the seq it should have
	Got        int64
}

func (e *SequenceGapError) Error() string {
	return fmt.Sprintf("headgate: workflow %q: event sequence must be contiguous: events[%d] has seq %d, want %d",
		e.WorkflowID, e.Index, e.Got, e.Want)
}

// UndecodableError: a stored record could not be decoded, so the operation that needs
// its fields refused to run. Nothing was written; replace or delete the record.
type UndecodableError struct {
	What string // e.g. `worker deployment "blue"`
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("headgate: %s is stored undecodable; replace or delete it", e.What)
}

// WorkflowClosedError: the workflow's run is over (Status), so it takes no signal or
// operator verb that needs an open run; or, from RetryWorkflow, the run did not fail
// (Status, open or closed), and only a failed run is retried. Nothing was written.
type WorkflowClosedError struct {
	WorkflowID string
	Status     WorkflowStatus
	retry      bool // from RetryWorkflow
}

func (e *WorkflowClosedError) Error() string {
	if e.retry {
		return fmt.Sprintf("headgate: workflow %q is %s: only a failed run can be retried", e.WorkflowID, e.Status)
	}
	return fmt.Sprintf("headgate: workflow %q is %s: its run is over", e.WorkflowID, e.Status)
}

// VersionDrainingError: a new run was to start on package Version, which the worker
// deployments that list it are all draining (or drained), so no new run starts on it.
// Nothing was written; route the workflow type to a version an active deployment
// serves (PutPackageRoute), or set one of its deployments active again.
type VersionDrainingError struct {
	WorkflowID string
	Version    string
}

func (e *VersionDrainingError) Error() string {
	return fmt.Sprintf("headgate: workflow %q: version %q is draining: no new run starts on it; route the type to another version",
		e.WorkflowID, e.Version)
}

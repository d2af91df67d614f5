package headgate

import (
	"errors"
	"fmt"
	"time"
)

// ErrJobNotFound is returned when a job id names no job: it was never enqueued, or it
// was deleted (success with retention 0, revoke, eviction).
var ErrJobNotFound = errors.New("headgate: job not found")

// InvalidError reports input the store refused before writing anything.
type InvalidError struct {
	// Field names what was wrong, e.g. "jobs[3].ID" or "lease".
	Field string
	// Reason says why.
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("headgate: invalid %s: %s", e.Field, e.Reason)
}

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// CursorFilterError: a cursor of ListJobs or of a bulk verb was given with another
// filter than the one it was made for. Its position is one in that filter's order:
// taken for this filter it would skip this filter's jobs before it, so nothing was read
// or written. It unwraps to the *InvalidError of the field Cursor.
type CursorFilterError struct {
	// Filter is the filter the cursor was given with (a cursor carries only a digest of
	// its own).
	Filter JobFilter
}

func (e *CursorFilterError) Error() string { return e.Unwrap().Error() }

func (e *CursorFilterError) Unwrap() error {
	return invalid("Cursor", "was made for another filter than %s; start without a cursor or pass the filter it was made for",
		e.Filter.describe())
}

// IDConflictError: a job with this id exists with a different kind, fingerprint or queue.
// Nothing of the batch was written.
type IDConflictError struct{ JobID string }

func (e *IDConflictError) Error() string {
	return fmt.Sprintf("headgate: job id %q is taken by a job with another kind, fingerprint or queue", e.JobID)
}

// DuplicateError: a job holds the unique key. Nothing new was written; when Replaced is
// true (only ever in a call of one job), the holder took the new job's debounce or
// replaced fields.
type DuplicateError struct {
	ExistingID string
	Replaced   bool
	// State and ScheduledAt are the holder's after the call; State is StateDeleted when
	// a throttle window outlived its holder.
	State       State
	ScheduledAt time.Time
}

func (e *DuplicateError) Error() string {
	if e.Replaced {
		return fmt.Sprintf("headgate: duplicate of job %q, which was updated in place", e.ExistingID)
	}
	return fmt.Sprintf("headgate: duplicate of job %q", e.ExistingID)
}

// QuarantinedError: the fingerprint is quarantined after repeated crashes; new jobs with it
// are refused until an operator releases it.
type QuarantinedError struct{ Fingerprint string }

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("headgate: fingerprint %q is quarantined; release it to enqueue again", e.Fingerprint)
}

// BackpressureError: the queue's limit on unfinished jobs would be passed; the whole batch
// was refused.
type BackpressureError struct {
	Queue    string
	Limit    int64
	Current  int64
	Incoming int64
}

func (e *BackpressureError) Error() string {
	return fmt.Sprintf("headgate: queue %q is full: %d unfinished jobs + %d incoming > limit %d",
		e.Queue, e.Current, e.Incoming, e.Limit)
}

// LeaseRejectedError: the caller no longer holds the job (its lease expired and was
// reclaimed, the job was cancelled or re-admitted, or it is gone). Nothing was written.
type LeaseRejectedError struct{ JobID string }

func (e *LeaseRejectedError) Error() string {
	return fmt.Sprintf("headgate: lease on job %q is no longer held", e.JobID)
}

// NotCancellableError: the job is already in a terminal state.
type NotCancellableError struct {
	JobID string
	State State
}

func (e *NotCancellableError) Error() string {
	return fmt.Sprintf("headgate: job %q is %s and cannot be cancelled", e.JobID, e.State)
}

// NotDurableError: the batch was written, but fewer replicas than StoreConfig.DurableReplicas
// confirmed it within DurableTimeout, so a failover now could lose it. Enqueueing the
// same jobs again (same ids) is safe: a replay writes nothing twice.
type NotDurableError struct {
	Replicas int // replicas that confirmed
	Wanted   int
}

func (e *NotDurableError) Error() string {
	return fmt.Sprintf("headgate: enqueue written but confirmed by %d of %d replicas; retry with the same ids", e.Replicas, e.Wanted)
}

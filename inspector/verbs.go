package inspector

import (
	"context"

	"github.com/headgate/headgate"
)

// Aliases of the operator verbs' types.
type (
	// RetryOptions tune Retry: a time to run at, keeping attempts, lifting the
	// fingerprint's quarantine, an edit made with the retry.
	RetryOptions = headgate.RetryOptions
	// RetryResult is what a retry did.
	RetryResult = headgate.RetryResult
	// JobEdit is what Edit changes; nil fields stay as they are.
	JobEdit = headgate.JobEdit
	// EditResult is where an edit left the job.
	EditResult = headgate.EditResult
)

// Retry makes a finished job (archived, undecodable, cancelled, quarantined, or completed
// and retained) available again, or scheduled at opts.At; its attempts start from zero
// unless opts.KeepAttempts. Refusals, with nothing written: headgate.ErrJobNotFound,
// *headgate.NotRetryableError (the job is not finished), *headgate.DuplicateError
// (another job holds its unique key), *headgate.BackpressureError (its queue is full).
func (i *Inspector) Retry(ctx context.Context, id string, opts *RetryOptions) (RetryResult, error) {
	return i.store.Retry(ctx, id, opts)
}

// Edit changes fields of a pending, scheduled, available or retryable job and files it
// again under them. A running job is refused with *headgate.JobRunningError, a finished
// one with *headgate.NotEditableError (edit it with a retry: RetryOptions.Edit).
func (i *Inspector) Edit(ctx context.Context, id string, edit JobEdit) (EditResult, error) {
	return i.store.Edit(ctx, id, edit)
}

// Delete removes a job that is not running, with everything stored under its id and
// every index entry, and returns the state it had. A running job is refused with
// *headgate.JobRunningError: cancel it first.
func (i *Inspector) Delete(ctx context.Context, id string) (headgate.State, error) {
	return i.store.Delete(ctx, id)
}

// ReleaseQuarantineAndRetry lifts fingerprint's quarantine, returns its held siblings to
// admission and retries the job that crashed into the limit, its attempts from zero.
func (i *Inspector) ReleaseQuarantineAndRetry(ctx context.Context, fingerprint string) (RetryResult, error) {
	return i.store.ReleaseQuarantineAndRetry(ctx, fingerprint)
}

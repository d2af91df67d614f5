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
	r, err := i.store.Retry(ctx, id, opts)
	return r, i.audit(err, "job retried", "job_id", id, "state", r.State, "lifted_quarantine", r.Lifted)
}

// Edit changes fields of a pending, scheduled, available or retryable job and files it
// again under them. A running job is refused with *headgate.JobRunningError (edit it
// once its attempt ends, or cancel it and retry it with the edit), a finished
// one with *headgate.NotEditableError (edit it with a retry: RetryOptions.Edit).
func (i *Inspector) Edit(ctx context.Context, id string, edit JobEdit) (EditResult, error) {
	r, err := i.store.Edit(ctx, id, edit)
	return r, i.audit(err, "job edited", "job_id", id, "state", r.State)
}

// Delete removes a job that is not running, with everything stored under its id and
// every index entry, and returns the state it had. A running job is refused with
// *headgate.JobRunningError: cancel it first.
func (i *Inspector) Delete(ctx context.Context, id string) (headgate.State, error) {
	st, err := i.store.Delete(ctx, id)
	return st, i.audit(err, "job deleted", "job_id", id, "was", st)
}

// ReleaseQuarantineAndRetry lifts fingerprint's quarantine, returns its held siblings to
// admission and retries the job that crashed into the limit, its attempts from zero.
func (i *Inspector) ReleaseQuarantineAndRetry(ctx context.Context, fingerprint string) (RetryResult, error) {
	r, err := i.store.ReleaseQuarantineAndRetry(ctx, fingerprint)
	switch {
	case !r.Lifted: // a fingerprint that was not quarantined changed nothing
	case r.JobID == "": // its job was retried already, or is gone: only the fingerprint was lifted
		err = i.audit(err, "quarantine released", "fingerprint", fingerprint, "siblings_released", r.Released)
	default:
		err = i.audit(err, "quarantine released and job retried", "fingerprint", fingerprint, "job_id", r.JobID,
			"siblings_released", r.Released)
	}
	return r, err
}

// Aliases of the bulk verbs' types.
type (
	// BulkOptions tune BulkCancel, BulkRetry and BulkDelete: dry run, batch size, resume
	// cursor, progress callback.
	BulkOptions = headgate.BulkOptions
	// BulkProgress is where a bulk verb stands after a batch.
	BulkProgress = headgate.BulkProgress
	// BulkResult is what a bulk verb did, and the cursor that resumes it after an error.
	BulkResult = headgate.BulkResult
)

// BulkCancel cancels the unfinished jobs f selects, in batches of at most
// headgate.BulkBatchMax jobs, each one script call, all or nothing; see
// headgate.Store.BulkCancel. A run that moved jobs is logged with its totals.
func (i *Inspector) BulkCancel(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	res, err := i.store.BulkCancel(ctx, f, o)
	i.auditBulk("jobs cancelled by filter", f, o, res)
	return res, err
}

// BulkRetry retries the finished jobs f selects; see headgate.Store.BulkRetry.
func (i *Inspector) BulkRetry(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	res, err := i.store.BulkRetry(ctx, f, o)
	i.auditBulk("jobs retried by filter", f, o, res)
	return res, err
}

// BulkDelete deletes the jobs f selects (any state but running); see
// headgate.Store.BulkDelete. A tenant's purge is a BulkDelete by Partition.
func (i *Inspector) BulkDelete(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	res, err := i.store.BulkDelete(ctx, f, o)
	i.auditBulk("jobs deleted by filter", f, o, res)
	return res, err
}

// PartitionCounts returns how many of the queue's jobs of a named partition are in each
// state (headgate.StateHeld for held ones): one read.
func (i *Inspector) PartitionCounts(ctx context.Context, queue, partition string) (map[headgate.State]int64, error) {
	return i.store.PartitionCounts(ctx, queue, partition)
}

// auditBulk logs what a bulk run wrote, even when an error stopped it after some batches:
// those batches took effect. A dry run writes nothing and is not logged.
func (i *Inspector) auditBulk(msg string, f JobFilter, o *BulkOptions, res BulkResult) {
	if res.Moved == 0 || (o != nil && o.DryRun) {
		return
	}
	i.log.Info(msg, "queue", f.Queue, "state", f.State, "kind", f.Kind, "partition", f.Partition, "tag", f.Tag,
		"fingerprint", f.Fingerprint, "older_than", f.OlderThan, "jobs", res.Moved, "skipped", res.Skipped)
}

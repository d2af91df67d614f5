package headgate

import "context"

// BulkRetry retries the finished jobs that f selects (f.State archived, undecodable,
// cancelled, quarantined or completed), oldest first, in batches of at most BulkBatchMax
// jobs, each batch one script call that writes all of it or nothing: each job becomes
// available now, its attempts from zero unless o.KeepAttempts. A job whose strict unique
// key another job holds now is skipped; a quarantined job stays held while its
// fingerprint is quarantined. A batch that would take the queue over its limit of
// unfinished jobs is refused whole (*BackpressureError) and the run stops there, with the
// Cursor that resumes it once the queue has room ("" when the first batch was refused:
// nothing was retried, and the same call starts the run again). A dry run meets the
// limit where the run would, counting its earlier batches as unfinished.
func (s *Store) BulkRetry(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	keep := 0
	if o != nil && o.KeepAttempts {
		keep = 1
	}
	return s.runBulk(ctx, bulkVerb{sc: scriptBulkRetry, what: "retried", counted: true,
		states: []State{StateArchived, StateUndecodable, StateCancelled, StateQuarantined, StateCompleted}}, f, o, keep)
}

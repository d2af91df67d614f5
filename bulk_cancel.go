package headgate

import "context"

// BulkCancel cancels the unfinished jobs that f selects (f.State pending, scheduled,
// available, running, retryable or StateHeld), oldest first, in batches of at most
// BulkBatchMax jobs, each batch one script call that writes all of it or nothing. A
// running job's holder hears of it at once, as with Cancel. Jobs that enter the state
// after the call started are left alone. It returns the totals; on an error (a
// *CorruptError, ctx ending) the totals so far and the Cursor that resumes the run.
// A state that cannot be cancelled is an *InvalidError, with nothing written.
func (s *Store) BulkCancel(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	return s.runBulk(ctx, bulkVerb{sc: scriptBulkCancel, what: "cancelled",
		states: []State{StatePending, StateScheduled, StateAvailable, StateRunning, StateRetryable, StateHeld}}, f, o)
}

package headgate

import "context"

// BulkDelete deletes the jobs that f selects, in any state but running (cancel those
// first), oldest first, in batches of at most BulkBatchMax jobs, each batch one script
// call that writes all of it or nothing: each job goes with its side keys, index entries
// and the strict unique key it holds. Purging a tenant is a BulkDelete by Partition in
// each state. Jobs that enter the state after the call started are left alone.
func (s *Store) BulkDelete(ctx context.Context, f JobFilter, o *BulkOptions) (BulkResult, error) {
	return s.runBulk(ctx, bulkVerb{sc: scriptBulkDelete, what: "deleted",
		states: []State{StatePending, StateScheduled, StateAvailable, StateRetryable, StateHeld, StateCompleted,
			StateArchived, StateCancelled, StateUndecodable, StateQuarantined}}, f, o)
}

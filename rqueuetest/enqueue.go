package rqueuetest

import (
	"context"

	"github.com/headgate/headgate"
)

// EnqueueWithoutUniqueness enqueues jobs as Store.Enqueue does, but with their
// uniqueness (UniqueKey, UniqueWindow, UniqueReplace, UniqueDebounce) cleared on copies:
// a test seeds jobs that production enqueues as unique — several holders of one key,
// say — without bending the store. Only this call is affected: the store and other
// tests, parallel ones included, keep enforcing uniqueness, and ids stay strict (a
// reused id is still a replay or *headgate.IDConflictError).
func EnqueueWithoutUniqueness(ctx context.Context, store *headgate.Store, jobs ...headgate.Envelope) ([]headgate.EnqueueResult, error) {
	plain := make([]headgate.Envelope, len(jobs))
	for i, e := range jobs {
		e.UniqueKey, e.UniqueWindow, e.UniqueReplace, e.UniqueDebounce = "", 0, 0, 0
		plain[i] = e
	}
	return store.Enqueue(ctx, plain...)
}

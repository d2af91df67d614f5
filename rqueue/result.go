package rqueue

import (
	"time"

	"github.com/headgate/headgate"
)

// Result is a job as an enqueue left it.
type Result struct {
	// ID is the stored job's id: the new job's, or for a duplicate, the id of the job
	// that holds the unique key.
	ID    string
	Kind  string
	Queue string

	// State is the job's state after the call: pending, scheduled or available for a new
	// job. A duplicate reports its holder's state as the enqueue left it;
	// headgate.StateDeleted means the holder already finished and was deleted (a
	// throttle window outlives its job).
	State headgate.State

	// ScheduledAt is when the job becomes (or became) available, on the store clock.
	ScheduledAt time.Time

	// Duplicate reports that the unique key was held: nothing new was written.
	Duplicate bool

	// Replaced reports that the duplicate updated the holder in place, by its debounce
	// or replace options.
	Replaced bool

	// Replayed reports that a job with this id already existed with the same kind,
	// fingerprint and queue: the call was an idempotent success that wrote nothing.
	Replayed bool
}

func resultOf(env headgate.Envelope, r headgate.EnqueueResult) *Result {
	return &Result{
		ID:          env.ID,
		Kind:        env.Kind,
		Queue:       env.Queue,
		State:       r.State,
		ScheduledAt: r.ScheduledAt,
		Replayed:    r.Replayed,
	}
}

package workflow

import "time"

// SetClock makes now the tasks' wall clock (CheckpointAfter) until the returned func
// restores it.
func SetClock(now func() time.Time) (restore func()) {
	old := clockFn.Swap(&now)
	return func() { clockFn.Store(old) }
}

// StepBackoff is the wait o makes before the retry that follows attempt.
func StepBackoff(o StepOptions, attempt int) time.Duration { return o.backoff(attempt) }

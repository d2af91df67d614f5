package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/headgate/headgate"
)

// A handler's return value decides how its attempt ends:
//
//	nil                     success (with the result set by SetResult)
//	Snooze(d)               run again after d, spending no attempt
//	Skip(reason)            give up: archived with reason
//	Revoke()                delete the job
//	RateLimited()           not now: available again at once, no counter moves
//	RetryAfter(d, err)      retry after d instead of the backoff
//	any other error         retry after the backoff (archived when attempts are spent)
//
// The special errors are matched with errors.As, so they may be wrapped.

// SnoozeError asks for the job to run again after Delay without spending an attempt.
// Return it with Snooze.
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("worker: snooze for %s", e.Delay) }

// Snooze ends the attempt and runs the job again after d (at least 1ms), spending no
// attempt.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// SkipError gives the job up: it is archived with Reason in its error history. Return it
// with Skip.
type SkipError struct {
	Reason string
}

func (e *SkipError) Error() string { return "worker: skip: " + e.Reason }

// Skip ends the attempt and archives the job without retrying it.
func Skip(reason string) error { return &SkipError{Reason: reason} }

// RevokeError deletes the job. Return it with Revoke.
type RevokeError struct{}

func (e *RevokeError) Error() string { return "worker: revoke" }

// Revoke ends the attempt and deletes the job and everything stored with it.
func Revoke() error { return &RevokeError{} }

// RateLimitedError hands the job back: it is available again at once, and neither its
// attempts nor its crashes count it. Return it with RateLimited.
type RateLimitedError struct{}

func (e *RateLimitedError) Error() string { return "worker: rate limited" }

// RateLimited ends the attempt and hands the job back for any worker to run again,
// counting nothing against it: for work that cannot proceed now, such as a downstream
// rate limit.
func RateLimited() error { return &RateLimitedError{} }

// RetryAfterError fails the attempt like any error, but retries the job after Delay
// instead of the exponential backoff. Return it with RetryAfter.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("worker: retry after %s", e.Delay)
	}
	return e.Err.Error()
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter fails the attempt with err and retries the job after d (at least 1ms)
// rather than after the backoff; the attempt counts toward the job's limit.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{Delay: d, Err: err} }

// SettledError says that the handler ended its job itself, through a transition of its
// own that acked the job in the same script (a workflow task's commit does): the worker
// sends no ack. Return it with Settled.
type SettledError struct{}

func (e *SettledError) Error() string { return "worker: the job was settled by its handler" }

// Settled ends the attempt without an ack, for a handler whose own store call already
// ended the job under its lease (see SettledError).
func Settled() error { return &SettledError{} }

// Causes of a handler's context cancellation, reported by context.Cause.
var (
	// ErrLeaseLost: the worker no longer holds the job (its lease expired and was
	// reclaimed, or the job was deleted). Whatever the handler returns is dropped.
	ErrLeaseLost = errors.New("worker: lease on the job was lost")
	// ErrCancelled: an operator cancelled the job (inspector, the headgate command or
	// Store.Cancel); it is cancelled in the store, terminal. The cancel reaches the
	// handler through a push within a round trip (at the latest at the next lease
	// renewal, when the worker was disconnected from Redis). Whatever the handler
	// returns is dropped.
	ErrCancelled = errors.New("worker: the job was cancelled by an operator")
	// ErrShutdown: the worker is stopping and ShutdownTimeout passed; the job was handed
	// back and will run again elsewhere. Whatever the handler returns is dropped.
	ErrShutdown = errors.New("worker: stopping; the job was handed back")
	// ErrJobTimeout: the attempt ran longer than Config.JobTimeout.
	ErrJobTimeout = errors.New("worker: job timeout")
)

// errUndecodable parks a job as undecodable: its kind has no handler or its payload does
// not decode into the handler's args.
type errUndecodable struct{ msg string }

func (e *errUndecodable) Error() string { return e.msg }

// panicError is a recovered handler panic with its stack.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.value, e.stack) }

// maxErrorBytes bounds the error text stored in a job's history.
const maxErrorBytes = 16 << 10

// outcome maps what a handler returned to the ack the store gets. timedOut reports that
// the attempt's JobTimeout fired before the handler returned.
func outcome(err error, timedOut bool, timeout time.Duration) (headgate.Outcome, headgate.AckOpts) {
	if err == nil {
		return headgate.OutcomeSuccess, headgate.AckOpts{}
	}
	return failureOutcome(err, timedOut, timeout)
}

// failureOutcome is outcome for a handler that returned an error. It is a function of its
// own because errors.As moves its targets to the heap: seven allocations that a successful
// attempt, the common case, does not pay.
func failureOutcome(err error, timedOut bool, timeout time.Duration) (headgate.Outcome, headgate.AckOpts) {
	var (
		undecodable *errUndecodable
		pe          *panicError
		snooze      *SnoozeError
		skip        *SkipError
		revoke      *RevokeError
		limited     *RateLimitedError
		retryAfter  *RetryAfterError
	)
	switch {
	case errors.As(err, &undecodable):
		return headgate.OutcomeUndecodable, headgate.AckOpts{Error: truncate(undecodable.msg)}
	case errors.As(err, &pe):
		return headgate.OutcomeRetry, headgate.AckOpts{Error: truncate(fmt.Sprintf("panic: %v", pe.value)), Stack: string(pe.stack)}
	case timedOut:
		return headgate.OutcomeRetry, headgate.AckOpts{Error: truncate(fmt.Sprintf("timeout after %s: %v", timeout, err))}
	case errors.As(err, &snooze):
		return headgate.OutcomeSnooze, headgate.AckOpts{Delay: max(snooze.Delay, time.Millisecond)}
	case errors.As(err, &skip):
		return headgate.OutcomeSkip, headgate.AckOpts{Error: truncate(skip.Reason)}
	case errors.As(err, &revoke):
		return headgate.OutcomeRevoke, headgate.AckOpts{}
	case errors.As(err, &limited):
		return headgate.OutcomeRateLimited, headgate.AckOpts{}
	case errors.As(err, &retryAfter):
		return headgate.OutcomeRetry, headgate.AckOpts{Error: truncate(err.Error()), Delay: max(retryAfter.Delay, time.Millisecond)}
	}
	return headgate.OutcomeRetry, headgate.AckOpts{Error: truncate(err.Error())}
}

func truncate(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	return s[:maxErrorBytes] + "… (truncated)"
}

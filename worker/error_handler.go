package worker

import (
	"context"
	"errors"

	"github.com/headgate/headgate"
)

// ErrorHandler is told of failed attempts and may change how they end. HandleError is
// called when a handler returns an error that would retry its job: any error but the
// ones that steer the job on purpose (Snooze, Skip, Revoke, RateLimited, Settled) and a
// payload that does not decode. HandlePanic is called when a handler panics, with the panic's
// value and stack. Both are called on the attempt's goroutine, with its context and
// claim, before the middleware sees the attempt's result.
//
// Returning nil leaves the attempt as it is. A non-nil result ends it as its Err says, as
// if the handler had returned Err: nil is a success, Skip(reason) archives the job,
// RetryAfter(d, err) retries it after d, Snooze(d) runs it again without spending an
// attempt, another error retries it after the backoff with that error in the job's
// history. An attempt whose Config.JobTimeout fired is retried as a timeout whatever
// error the result holds, as it is whatever error the handler returns; a result with a
// nil Err still makes it a success. A panic in the error handler fails
// the attempt like a handler's panic.
type ErrorHandler interface {
	HandleError(ctx context.Context, claim *headgate.Claim, err error) *ErrorHandlerResult
	HandlePanic(ctx context.Context, claim *headgate.Claim, value any, stack string) *ErrorHandlerResult
}

// ErrorHandlerResult is what an ErrorHandler makes of a failed attempt: the attempt
// ends as if its handler had returned Err.
type ErrorHandlerResult struct {
	Err error
}

// handleFailure passes a failed attempt's error to the error handler and returns what
// the attempt ends with.
func (w *Worker) handleFailure(ctx context.Context, c *headgate.Claim, err error) error {
	h := w.cfg.ErrorHandler
	if h == nil || err == nil {
		return err
	}
	var res *ErrorHandlerResult
	if pe, ok := asPanic(err); ok {
		res = h.HandlePanic(ctx, c, pe.value, string(pe.stack))
	} else if OutcomeOf(err) == headgate.OutcomeRetry {
		res = h.HandleError(ctx, c, err)
	}
	if res == nil {
		return err
	}
	return res.Err
}

func asPanic(err error) (*panicError, bool) {
	var pe *panicError
	ok := errors.As(err, &pe)
	return pe, ok
}

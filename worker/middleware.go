package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/headgate/headgate"
)

// Middleware wraps a handler: it gets the next handler of the chain and returns the
// handler to call instead, which may act before and after next, change the context,
// or return without calling next (the attempt then ends as its return value says).
//
// A worker's chain, outermost first, is:
//
//	Config.Middleware[0] … Config.Middleware[n-1]   (every kind, unknown kinds included)
//	the kind's middleware given to Handle or HandleFunc, in the order given
//	Config.ErrorHandler                              (failures and panics only)
//	the handler, its panic recovered into an error
//
// A middleware therefore sees a handler's panic as an error (matched by IsPanic) and
// what the error handler made of a failure, so that what it records is how the attempt
// ends. A panic of a middleware itself fails the attempt like a handler's, without
// reaching the error handler. Middleware is called on the pool goroutine that runs the
// attempt, for every attempt, so it must be safe for concurrent use.
type Middleware func(next HandlerFunc) HandlerFunc

// IsPanic reports whether err, as a middleware sees it, is a handler's recovered panic.
func IsPanic(err error) bool {
	_, ok := asPanic(err)
	return ok
}

// OutcomeOf returns the outcome an attempt that ended with err is acked as, for
// middleware that records outcomes: Success for nil, Snooze, Skip, Revoke, RateLimited
// or Undecodable for the errors that ask for them, Retry for any other error (a panic
// included). An attempt whose JobTimeout fired is acked as Retry whatever it returns.
// Settled is a Success: the handler ended its job itself (a workflow task's commit),
// and the worker sends no ack of its own.
func OutcomeOf(err error) headgate.Outcome {
	if err == nil {
		return headgate.OutcomeSuccess // without outcome's allocations: the common case
	}
	var settled *SettledError
	if errors.As(err, &settled) {
		return headgate.OutcomeSuccess
	}
	o, _ := outcome(err, false, 0)
	return o
}

// OutcomeLabel is the outcome of an attempt as metrics and traces label it: what the
// worker acks it as (OutcomeOf), or, when the worker dropped what the handler returned
// (ctx's cause says why), "lease_lost", "cancelled" (by an operator), or "hand_back"
// for a job handed back at shutdown, which is what the worker acks it as. An attempt
// that fails after its JobTimeout fired is "retry", as it is acked, whatever it returns.
func OutcomeLabel(ctx context.Context, err error) string {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrLeaseLost):
		return headgate.OutcomeLeaseLost.String()
	case errors.Is(cause, ErrCancelled):
		return "cancelled"
	case errors.Is(cause, ErrShutdown):
		return headgate.OutcomeHandBack.String()
	}
	o := OutcomeOf(err)
	if errors.Is(cause, ErrJobTimeout) && o != headgate.OutcomeSuccess && o != headgate.OutcomeUndecodable {
		// A failure after the JobTimeout fired is a retry whatever it asked for (see outcome).
		o = headgate.OutcomeRetry
	}
	return o.String()
}

// wrap builds the handler a kind's attempts call: fn inside the error handler, the
// kind's middleware and the worker's.
func (w *Worker) wrap(kind string, fn HandlerFunc, kindMW []Middleware) HandlerFunc {
	h := w.recovered(fn)
	for i := len(kindMW) - 1; i >= 0; i-- {
		if kindMW[i] == nil {
			panic(fmt.Sprintf("worker: nil middleware [%d] for kind %q", i, kind))
		}
		h = kindMW[i](h)
	}
	return w.withWorkerMiddleware(h)
}

func (w *Worker) withWorkerMiddleware(h HandlerFunc) HandlerFunc {
	for i := len(w.cfg.Middleware) - 1; i >= 0; i-- {
		h = w.cfg.Middleware[i](h)
	}
	return h
}

// recovered runs fn, turning its panic into a *panicError, and hands failures to the
// error handler.
func (w *Worker) recovered(fn HandlerFunc) HandlerFunc {
	return func(ctx context.Context, c *headgate.Claim) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = &panicError{value: r, stack: debug.Stack()}
			}
			err = w.handleFailure(ctx, c, err)
		}()
		return fn(ctx, c)
	}
}

// unknownKind is what an attempt of a kind without a handler calls: the worker's
// middleware around the failure.
func (w *Worker) unknownKind() HandlerFunc {
	return w.withWorkerMiddleware(func(_ context.Context, c *headgate.Claim) error {
		return &noHandlerError{kind: c.Envelope.Kind, worker: w.cfg.ID}
	})
}

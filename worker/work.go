package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/headgate/headgate"
)

// Attempt is how one job run by Work ended.
type Attempt struct {
	JobID string
	Kind  string
	// Outcome is what the attempt was acked as: what the handler's return value, its
	// panic or a job it cannot take maps to, as under a started worker.
	// A job handed back because Work's context ended is OutcomeHandBack; an ack the
	// store refused as invalid was replaced by OutcomeRetry (see AckErr).
	Outcome headgate.Outcome
	// State is the job's state after the ack: headgate.StateDeleted when it is gone (a
	// success without retention, a revoke); empty when the ack was not applied.
	State headgate.State
	// Err is the handler's error: what it returned, a panic as an error with the panic's
	// value and stack, `no handler for kind "K" on worker ID` when the worker has no
	// handler for the job's kind (a failed attempt, retried like any other), or why the
	// job is undecodable (a payload that does not decode). Nil for a success. For a job handed back unrun
	// because Work's context ended, it wraps the context's cause.
	Err error
	// AckErr is why the ack was not applied as Outcome says: a
	// *headgate.LeaseRejectedError when the lease was no longer held (the job was
	// cancelled, or its lease expired and was reclaimed); a *headgate.InvalidError when
	// the store refused the ack, which was then sent as a retry carrying the reason; or
	// the Redis error of an ack that was not sent (the job is reclaimed when its lease
	// expires).
	AckErr error
}

// Work admits up to n available jobs from the worker's queues (at most
// headgate.MaxCapacity), runs each to its end in the calling goroutine in admission
// order, then acks them all in one Store.AckMany and reports each attempt, in admission
// order. It returns no attempt and a nil error when no job is available.
//
// A job runs as under a started worker: the same handlers, outcome mapping and panic
// recovery, Config.JobTimeout, and the job helpers (Step, SetResult, Log, WriteOutput,
// WriteProgress). Work does nothing else: no maintenance (call Store.PromoteDue to make
// due jobs available, Store.ReclaimExpired to reclaim expired leases), no lease renewal,
// no subscription to cancels (a job cancelled while it runs has its ack rejected), no
// blocking wait for work, and no goroutine outlives the call. Since the leases of the
// batch are not renewed, keep its total run time under Config.Lease, or freeze the store
// clock as tests do; an attempt whose lease ran out and was reclaimed meanwhile reports
// a *headgate.LeaseRejectedError in AckErr.
//
// The handlers' contexts derive from ctx, values and cancellation alike. When ctx ends,
// the handler running has its context cancelled and the jobs not run yet are not
// started. All are acked nonetheless: a handler that returns an error after ctx ended
// has its job handed back, as are the jobs not run (OutcomeHandBack: available again
// at once, no attempt or crash counted), and Work returns the attempts with an error
// that wraps the context's cause. A handler that returns nil after ctx ended is acked as
// a success: its work is done. A handler that ignores ctx blocks Work.
//
// Work is for a worker that is never started, such as a test's or a command's that
// drains a queue once: it returns ErrAlreadyStarted on a worker that was started, and
// must not run while Start or Run does. Register handlers before calling it, not while
// it runs. It fails when the worker has no handler. Calls of Work may overlap: each
// admits, runs and acks its own jobs.
//
// A handler that ends the goroutine with runtime.Goexit (as t.FailNow does in a test)
// ends Work too; the batch is acked on the way out, that attempt as a retry, the jobs
// not run as handed back.
func (w *Worker) Work(ctx context.Context, n int) ([]Attempt, error) {
	w.mu.Lock()
	started, handlers := w.started, len(w.handlers)
	w.mu.Unlock()
	switch {
	case started:
		return nil, ErrAlreadyStarted
	case handlers == 0:
		return nil, errors.New("worker: no handlers registered: register one with Handle or HandleFunc before calling Work")
	case n < 1:
		return nil, &headgate.InvalidError{Field: "n", Reason: fmt.Sprintf("must be at least 1, not %d", n)}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("worker: Work: %w", context.Cause(ctx))
	}

	t0 := time.Now()
	// Not ctx: once Redis applied an admission, its jobs are acked whatever ctx does.
	claims, err := w.store.Admit(context.WithoutCancel(ctx), headgate.AdmitRequest{
		Worker:   w.cfg.ID,
		LeaseID:  w.nextLeaseID(),
		Queues:   w.cfg.Queues,
		Capacity: min(n, headgate.MaxCapacity),
		Lease:    w.cfg.Lease,
		Quantum:  w.cfg.Quantum,
	})
	if err != nil {
		return nil, fmt.Errorf("worker: Work: admit jobs from queues %q: %w", w.cfg.Queues, err)
	}
	if len(claims) == 0 {
		return nil, nil
	}

	execs := make([]*execution, len(claims))
	attempts := make([]Attempt, len(claims))
	for i, c := range claims {
		execs[i] = w.newExecution(ctx, c, t0.Add(w.cfg.Lease))
		attempts[i] = Attempt{JobID: c.Envelope.ID, Kind: c.Envelope.Kind}
	}
	running := -1 // the execution whose handler has not returned
	defer func() {
		if running >= 0 {
			// The handler did not return: runtime.Goexit is unwinding the goroutine.
			// Ack the batch so that no job stays running until its lease expires.
			e := execs[running]
			e.outcome, e.opts = headgate.OutcomeRetry, headgate.AckOpts{Error: errGoexit.Error()}
			for _, e := range execs[running+1:] {
				e.outcome, e.opts = headgate.OutcomeHandBack, headgate.AckOpts{}
			}
			_ = w.ackWork(ctx, execs, attempts)
		}
		for _, e := range execs {
			e.cancel(context.Canceled)
		}
	}()

	handedBack := 0
	for i, e := range execs {
		if ctx.Err() != nil {
			e.outcome, e.opts = headgate.OutcomeHandBack, headgate.AckOpts{}
			attempts[i].Err = fmt.Errorf("worker: not run: %w", context.Cause(ctx))
			handedBack++
			continue
		}
		running = i
		back := w.runAttempt(ctx, e, &attempts[i])
		running = -1
		if back {
			handedBack++
		}
	}
	err = w.ackWork(ctx, execs, attempts)
	if handedBack > 0 {
		err = errors.Join(fmt.Errorf("worker: Work: %w; %d of %d jobs handed back", context.Cause(ctx), handedBack, len(execs)), err)
	}
	return attempts, err
}

// errGoexit is the error of an attempt whose handler ended its goroutine.
var errGoexit = errors.New("worker: the handler ended its goroutine (runtime.Goexit, as t.FailNow does) before returning")

// runAttempt runs one attempt of a Work call, records what the handler returned in a,
// and sets how the attempt is acked. It reports whether the job is handed back because
// ctx, the Work call's context, ended.
func (w *Worker) runAttempt(ctx context.Context, e *execution, a *Attempt) bool {
	hctx := e.ctx
	cancelTimeout := context.CancelFunc(func() {})
	if w.cfg.JobTimeout > 0 {
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.cfg.JobTimeout, ErrJobTimeout)
	}
	err := w.call(hctx, e)
	a.Err = err
	timedOut := w.cfg.JobTimeout > 0 && errors.Is(context.Cause(hctx), ErrJobTimeout)
	cancelTimeout()
	if err != nil && ctx.Err() != nil {
		// Most likely the cancellation's doing, not the job's: hand it back, as a
		// stopping worker does.
		e.outcome, e.opts = headgate.OutcomeHandBack, headgate.AckOpts{}
		return true
	}
	var settled *SettledError
	if errors.As(err, &settled) {
		// The handler's own transition acked the job (a workflow task's commit).
		e.settledByHandler = true
		a.Err, a.Outcome, a.State = nil, headgate.OutcomeSuccess, headgate.StateDeleted
		return false
	}
	e.outcome, e.opts = outcome(err, timedOut, w.cfg.JobTimeout)
	w.logAttempt(e, err, e.outcome, timedOut)
	return false
}

// ackWork acks the executions of a Work call in one round trip and records the results
// in attempts. It returns an error when acks were not sent: Redis failed.
func (w *Worker) ackWork(ctx context.Context, execs []*execution, attempts []Attempt) error {
	// Not ctx alone: jobs admitted are acked even when ctx ended.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopGrace)
	defer cancel()
	var unsettled []int // the executions to ack: not those their handler settled
	for i, e := range execs {
		if !e.settledByHandler {
			unsettled = append(unsettled, i)
		}
	}
	if len(unsettled) < len(execs) {
		if len(unsettled) == 0 {
			return nil
		}
		sub := make([]*execution, len(unsettled))
		subAttempts := make([]Attempt, len(unsettled))
		for k, i := range unsettled {
			sub[k], subAttempts[k] = execs[i], attempts[i]
		}
		err := w.ackWork(ctx, sub, subAttempts)
		for k, i := range unsettled {
			attempts[i] = subAttempts[k]
		}
		return err
	}
	reqs := make([]headgate.AckRequest, len(execs))
	for i, e := range execs {
		reqs[i] = e.ackRequest()
	}
	res, err := w.store.AckMany(actx, reqs)
	var invalid *headgate.InvalidError
	switch {
	case err == nil:
		for i, e := range execs {
			w.workAcked(e, &attempts[i], res[i], nil)
		}
		return nil
	case errors.As(err, &invalid):
		// One bad ack refuses the batch: ack one at a time so it holds up no other.
		var errs []error
		for i, e := range execs {
			errs = append(errs, w.ackWorkAlone(actx, e, &attempts[i], reqs[i]))
		}
		return errors.Join(errs...)
	}
	for i, e := range execs {
		attempts[i].Outcome, attempts[i].AckErr = e.outcome, err
	}
	return fmt.Errorf("worker: Work: ack %d jobs: %w; they are reclaimed when their leases expire", len(execs), err)
}

// ackWorkAlone acks one execution of a Work call by itself; an ack the store still
// refuses as invalid is sent as a retry carrying the reason, so that the job is not left
// running.
func (w *Worker) ackWorkAlone(ctx context.Context, e *execution, a *Attempt, req headgate.AckRequest) error {
	res, err := w.store.AckMany(ctx, []headgate.AckRequest{req})
	var refused error
	var invalid *headgate.InvalidError
	if errors.As(err, &invalid) {
		refused = err
		e.outcome, e.opts = headgate.OutcomeRetry, headgate.AckOpts{Error: truncate("worker: the store refused the ack: " + err.Error())}
		res, err = w.store.AckMany(ctx, []headgate.AckRequest{e.ackRequest()})
	}
	if err != nil {
		a.Outcome, a.AckErr = e.outcome, err
		return fmt.Errorf("worker: Work: ack job %s: %w; it is reclaimed when its lease expires", quote(e.lease.JobID), err)
	}
	w.workAcked(e, a, res[0], refused)
	return nil
}

// workAcked records an ack the store answered.
func (w *Worker) workAcked(e *execution, a *Attempt, r headgate.AckResult, refused error) {
	a.Outcome, a.State, a.AckErr = e.outcome, r.State, cmp.Or(r.Err, refused)
	if w.onAck != nil {
		w.onAck(e.lease.JobID, e.outcome, r.State, r.Err)
	}
}

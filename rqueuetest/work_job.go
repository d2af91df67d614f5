package rqueuetest

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// WorkOpts configure a WorkJob; nil means the defaults.
type WorkOpts struct {
	// Enqueue are the job's options (queue, partition, retention, ...), as a producer
	// gives them. Whatever its schedule, the job runs at once.
	Enqueue *rqueue.EnqueueOpts
	// Worker configures the worker the handler runs in: JobTimeout, RetryBase, RetryCap
	// and so on. Namespace and Queues are WorkJob's.
	Worker *worker.Config
	// Timeout bounds the attempt, as DrainOpts.Timeout bounds a Drain: it is the
	// deadline of the handler's context. When it passes, the handler's context is
	// cancelled, its job is handed back unless it succeeds, and WorkJob fails the test.
	// A handler that ignores its context is not interrupted. Defaults to
	// DrainTimeoutDefault (1m); a negative Timeout fails the test.
	Timeout time.Duration
}

// WorkResult is how the one attempt of a WorkJob ended.
type WorkResult struct {
	// Outcome is the outcome the worker acked: how the handler's return value (or its
	// panic, or a payload that does not decode) maps to the store.
	Outcome headgate.Outcome
	// State is the job's state after the ack: headgate.StateDeleted when it is gone
	// (a success with retention 0, a revoke).
	State headgate.State
	// Err is the handler's error, as worker.Attempt reports it: what the handler
	// returned, a panic as an error with the panic's value and stack, or why the job is
	// undecodable (its payload does not decode). Nil for a success.
	Err error
	// Job is the job as stored after the attempt; nil when it was deleted.
	Job *headgate.Job
	// Kit is the private kit the job ran in, to look further through Kit.Store: the
	// job's result, error history, output and progress.
	Kit *Kit
}

// WorkJob runs one attempt of a job with args through fn in a real worker, with
// worker.Worker.Work on the calling goroutine, and returns how it ended. The job is
// enqueued in a private namespace on an embedded miniredis (no server needed) with the
// store clock frozen, so the outcome is the one attempt's: a retry or snooze is not run
// again. Whatever its schedule, the job runs at once; a staged job is released first,
// and a job pinned to a worker runs in a worker of that id. The attempt is bounded by
// WorkOpts.Timeout (a minute by default), so a handler waiting for its context does not
// hang the test.
//
// Use it to test a handler's outcome mapping; use a Kit and Drain to test handlers
// together with the producers that enqueue their jobs.
func WorkJob[T worker.Args](ctx context.Context, t testing.TB, fn func(ctx context.Context, job *worker.Job[T]) error,
	args T, opts *WorkOpts) *WorkResult {
	t.Helper()
	return workJob(ctx, t, t, fn, args, opts)
}

func workJob[T worker.Args](ctx context.Context, t testing.TB, fail tb, fn func(ctx context.Context, job *worker.Job[T]) error,
	args T, opts *WorkOpts) *WorkResult {
	fail.Helper()
	var o WorkOpts
	if opts != nil {
		o = *opts
	}
	k := New(t)
	k.fail = fail
	Handle(k, fn)
	k.Freeze(k.Now())

	res, err := k.Client.Enqueue(ctx, args, o.Enqueue)
	if err != nil {
		fatalf(fail, "rqueuetest.WorkJob: enqueue the %s job: %v", args.Kind(), err)
	}
	if res.State == headgate.StatePending {
		if _, err := k.Client.Release(ctx, res.ID); err != nil {
			fatalf(fail, "rqueuetest.WorkJob: release the staged job %s: %v", res.ID, err)
		}
	}
	if wait := res.ScheduledAt.Sub(k.Now()); wait > 0 {
		k.Advance(wait) // run it at once, at its scheduled time
	}
	if _, _, err := promoteAll(ctx, k.Store); err != nil {
		fatalf(fail, "rqueuetest.WorkJob: promote the %s job %s: %v", args.Kind(), res.ID, err)
	}
	var cfg worker.Config
	if o.Worker != nil {
		cfg = *o.Worker
	}
	cfg.Queues = []string{res.Queue}
	if j := jobOrNil(fail, ctx, k.Store, res.ID); j != nil && j.StickyWorker != "" {
		cfg.ID = j.StickyWorker // the job is pinned: run it in the worker it is pinned to
	}
	if o.Timeout < 0 {
		fatalf(fail, "rqueuetest.WorkJob: WorkOpts.Timeout is negative (%v): leave it 0 for the default", o.Timeout)
	}
	timeout := cmp.Or(o.Timeout, DrainTimeoutDefault)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	attempts, err := k.newWorker(&cfg).Work(wctx, 1)
	if err != nil && wctx.Err() != nil {
		fatalf(fail, "rqueuetest.WorkJob: the %s job %s did not end within %s (WorkOpts.Timeout, or the context's deadline): "+
			"its handler's context was cancelled: %v", args.Kind(), res.ID, humandur.String(timeout), err)
	}
	if err != nil {
		fatalf(fail, "rqueuetest.WorkJob: run the %s job %s: %v", args.Kind(), res.ID, err)
	}
	if len(attempts) != 1 || attempts[0].JobID != res.ID {
		state := headgate.StateDeleted
		if j := jobOrNil(fail, ctx, k.Store, res.ID); j != nil {
			state = j.State
		}
		fatalf(fail, "rqueuetest.WorkJob: the worker did not admit the %s job %s; it is %s", args.Kind(), res.ID, state)
	}
	a := attempts[0]
	if a.AckErr != nil {
		fatalf(fail, "rqueuetest.WorkJob: the ack of the %s job %s (%s) was not applied: %v", args.Kind(), res.ID, a.Outcome, a.AckErr)
	}
	out := &WorkResult{Kit: k, Outcome: a.Outcome, State: a.State, Err: a.Err}
	out.Job = jobOrNil(fail, ctx, k.Store, res.ID)
	return out
}

// jobOrNil returns the job, or nil when it does not exist.
func jobOrNil(t tb, ctx context.Context, s *headgate.Store, id string) *headgate.Job {
	t.Helper()
	j, err := s.GetJob(ctx, id)
	if errors.Is(err, headgate.ErrJobNotFound) {
		return nil
	}
	if err != nil {
		fatalf(t, "rqueuetest: read job %s: %v", id, err)
	}
	return j
}

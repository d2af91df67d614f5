package rqueuetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// garbledArgs never decode: a worker parks their jobs as undecodable.
type garbledArgs struct{}

func (garbledArgs) Kind() string { return "garbled" }

func (*garbledArgs) DecodeMsgpack(*msgpack.Decoder) error { return errors.New("cannot decode") }

func TestWorkJobOutcomes(t *testing.T) {
	t.Parallel()
	keep := &WorkOpts{Enqueue: &rqueue.EnqueueOpts{Retention: time.Hour}}
	for _, c := range []struct {
		do      string
		opts    *WorkOpts
		outcome headgate.Outcome
		state   headgate.State
		err     string
	}{
		{"ok", nil, headgate.OutcomeSuccess, headgate.StateDeleted, ""},
		{"ok", keep, headgate.OutcomeSuccess, headgate.StateCompleted, ""},
		{"fail", nil, headgate.OutcomeRetry, headgate.StateRetryable, "downstream said no"},
		{"fail", &WorkOpts{Enqueue: &rqueue.EnqueueOpts{MaxAttempts: 1}}, headgate.OutcomeRetry, headgate.StateArchived, "downstream said no"},
		{"skip", nil, headgate.OutcomeSkip, headgate.StateArchived, "worker: skip: nothing to do"},
		{"revoke", keep, headgate.OutcomeRevoke, headgate.StateDeleted, "worker: revoke"},
		{"snooze", nil, headgate.OutcomeSnooze, headgate.StateScheduled, "worker: snooze for 1m0s"},
		{"limited", nil, headgate.OutcomeRateLimited, headgate.StateAvailable, "worker: rate limited"},
		{"panic", nil, headgate.OutcomeRetry, headgate.StateRetryable, "panic: handler bug\n\ngoroutine "},
	} {
		t.Run(c.do+"/"+string(c.state), func(t *testing.T) {
			t.Parallel()
			r := WorkJob(testCtx(t), t, doHandler, stepArgs{Do: c.do}, c.opts)
			if r.Outcome != c.outcome || r.State != c.state {
				t.Errorf("WorkJob = %s, %s; want %s, %s", r.Outcome, r.State, c.outcome, c.state)
			}
			switch {
			case c.err == "" && r.Err != nil:
				t.Errorf("Err = %v, want nil", r.Err)
			case c.err != "" && (r.Err == nil || !strings.HasPrefix(r.Err.Error(), c.err)):
				t.Errorf("Err = %v, want %q…", r.Err, c.err)
			}
			if (r.Job == nil) != (c.state == headgate.StateDeleted) {
				t.Errorf("Job = %+v with state %s", r.Job, r.State)
			}
		})
	}
}

func TestWorkJobUndecodable(t *testing.T) {
	t.Parallel()
	called := false
	r := WorkJob(testCtx(t), t, func(context.Context, *worker.Job[*garbledArgs]) error {
		called = true
		return nil
	}, &garbledArgs{}, nil)
	if r.Outcome != headgate.OutcomeUndecodable || r.State != headgate.StateUndecodable || called ||
		r.Err == nil || !strings.Contains(r.Err.Error(), "cannot decode") {
		t.Errorf("WorkJob = %s, %s, %v (handler called: %t); want undecodable with the decode error, without a call",
			r.Outcome, r.State, r.Err, called)
	}
	errs, err := r.Kit.Store.JobErrors(testCtx(t), r.Job.ID)
	if err != nil || len(errs) == 0 || !strings.Contains(errs[0].Message, "cannot decode") {
		t.Errorf("history = %q, %v; want the decode error", errs, err)
	}
}

func TestWorkJobTimeout(t *testing.T) {
	t.Parallel()
	r := WorkJob(testCtx(t), t, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		<-ctx.Done()
		return ctx.Err()
	}, stepArgs{}, &WorkOpts{Worker: &worker.Config{JobTimeout: 20 * time.Millisecond}})
	if r.Outcome != headgate.OutcomeRetry || r.State != headgate.StateRetryable || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("WorkJob = %s, %s, %v; want a retry after the timeout", r.Outcome, r.State, r.Err)
	}
}

// A handler that waits for its context does not hang WorkJob: the attempt is bounded
// by WorkOpts.Timeout, and the failure names the job and the bound.
func TestWorkJobBounded(t *testing.T) {
	t.Parallel()
	var id string
	f := runFake(func(ft tb) {
		workJob(context.Background(), t, ft, func(ctx context.Context, job *worker.Job[stepArgs]) error {
			id = job.ID
			<-ctx.Done()
			return ctx.Err()
		}, stepArgs{Do: "wait"}, &WorkOpts{Timeout: 50 * time.Millisecond})
	})
	wantFailure(t, f, "rqueuetest.WorkJob: the step job "+id+" did not end within 50ms (WorkOpts.Timeout, or the context's deadline): "+
		"its handler's context was cancelled: worker: Work: context deadline exceeded; 1 of 1 jobs handed back")

	f = runFake(func(ft tb) {
		workJob(testCtx(t), t, ft, doHandler, stepArgs{Do: "ok"}, &WorkOpts{Timeout: -time.Second})
	})
	wantFailure(t, f, "rqueuetest.WorkJob: WorkOpts.Timeout is negative (-1s): leave it 0 for the default")
}

func TestWorkJobRunsAtOnce(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]*rqueue.EnqueueOpts{
		"scheduled": {ScheduledIn: 24 * time.Hour},
		"pending":   {Pending: true},
		"sticky":    {Sticky: "worker-7"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got *worker.Job[stepArgs]
			r := WorkJob(testCtx(t), t, func(ctx context.Context, job *worker.Job[stepArgs]) error {
				got = job
				return nil
			}, stepArgs{Do: name}, &WorkOpts{Enqueue: opts})
			if r.Outcome != headgate.OutcomeSuccess || got == nil || got.Args.Do != name {
				t.Errorf("WorkJob = %s with job %+v; want the job run once, successfully", r.Outcome, got)
			}
		})
	}
}

func TestWorkJobFailures(t *testing.T) {
	t.Parallel()
	f := runFake(func(ft tb) {
		workJob(testCtx(t), t, ft, doHandler, stepArgs{Do: "ok"}, &WorkOpts{Enqueue: &rqueue.EnqueueOpts{Queue: "bad{queue}"}})
	})
	wantFailure(t, f, "rqueuetest.WorkJob: enqueue the step job:")
}

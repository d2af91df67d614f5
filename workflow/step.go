package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/headgate/headgate"
)

// Defaults of StepOptions.
const (
	// StepRetriesDefault is how many times a failed step is retried.
	StepRetriesDefault = 3
	// StepBackoffDefault is the wait before a step's first retry; it doubles per retry,
	// up to StepBackoffCap.
	StepBackoffDefault = time.Second
	StepBackoffCap     = time.Hour
)

// StepOptions tune a step; nil means the defaults.
type StepOptions struct {
	// Retries is how many times a failed attempt is retried, each after a durable wait
	// (the task ends and a timer brings the run back). Negative: none. Zero means
	// StepRetriesDefault (3 retries, 4 attempts in all).
	Retries int
	// Backoff is the wait before the first retry, doubled per retry up to
	// StepBackoffCap. Defaults to StepBackoffDefault.
	Backoff time.Duration
	// Timeout bounds each attempt: fn's context is done after it. Defaults to none.
	Timeout time.Duration
	// Checkpoint commits the step's result (with whatever the task made before it)
	// before the code goes on, so a crash of the worker later in the task does not run
	// the step again. Without it a quick step's result rides in the task's next commit
	// (see CheckpointAfter).
	Checkpoint bool
	// Job runs each attempt of the step as a headgate job of its own, on its queue,
	// partition and rate class, rather than inside the workflow's task: see StepJob.
	// Defaults to nil: the step runs in the task.
	Job *StepJob
}

// Step runs fn as the named step of the run, once: its result is recorded in the history
// (encoded as JSON) before the code goes on, and Step returns the recorded result
// (decoded from that JSON, also the first time), so every later replay returns the same
// without calling fn (a quick step's result may be committed with the task's
// next commit rather than at once: see CheckpointAfter). Steps are identified by name and occurrence ("charge#1",
// "charge#2"); a replay that asks for another step than the history recorded at that
// point fails the task with a NonDeterminismError.
//
// A failed attempt is retried after a durable backoff (opts); after the last one Step
// returns a *StepError, every replay the same. fn runs at least once: a worker that
// dies after fn and before the result was committed leaves the step to run again.
// With opts.Job, each attempt runs as a job of its own on its queue, partition and rate
// class (see StepJob): the task ends at the step, and the step job's commit brings the
// run back with the outcome.
func Step[T any](ctx Context, name string, fn func(ctx context.Context) (T, error), opts *StepOptions) (T, error) {
	var zero T
	if err := checkName("name", name); err != nil {
		return zero, err
	}
	o := StepOptions{Retries: StepRetriesDefault, Backoff: StepBackoffDefault}
	if opts != nil {
		o = *opts
		if o.Retries == 0 {
			o.Retries = StepRetriesDefault
		}
		if o.Retries < 0 {
			o.Retries = 0
		}
		if o.Backoff <= 0 {
			o.Backoff = StepBackoffDefault
		}
	}
	c := ctx.state()
	t := c.t
	if err := o.Job.validate(t.queue, t.row.PackageVersion); err != nil {
		return zero, fmt.Errorf("workflow: step %s: %w", name, err)
	}
	t.mu.Lock()
	key := t.next(c.scope, classStep, name)
	attempt := 1
	var last headgate.Event
	replayed := false
	for {
		e, ok := t.peek(c.scope)
		if !ok {
			break
		}
		if cl, k, _ := commandOf(e); replayed && (cl != classStep || k != key) {
			break
		}
		e, _ = t.match(c.scope, classStep, key)
		last, replayed = e, true
	}
	run := false // a step job's attempt: this replay runs fn, and the job's handler commits
	if replayed {
		switch {
		case last.Kind == headgate.EventStepScheduled:
			// The attempt runs as a step job, whose commit brings its outcome.
			target := t.isStepTarget(key, last.Attempt)
			if c.cancelledLocked() {
				if target {
					t.skip = "the run was cancelled before the step ran"
					t.block()
				}
				t.givenUp = append(t.givenUp, key)
				t.mu.Unlock()
				return zero, ErrCancelled
			}
			if !target {
				t.block()
			}
			attempt, run = last.Attempt, true
		case last.Kind == headgate.EventStepCompleted:
			t.mu.Unlock()
			var out T
			if err := json.Unmarshal(last.Result, &out); err != nil {
				return zero, fmt.Errorf("workflow: step %s: decode the recorded result: %w", key, err)
			}
			return out, nil
		case last.FireAt.IsZero(): // the last attempt failed
			t.mu.Unlock()
			return zero, &StepError{Step: key, Attempt: last.Attempt, Message: errorText(last)}
		}
		if !run {
			// A retry is due when its timer fired, unless the run was cancelled first.
			timer := retryTimer(key, last.Attempt)
			fired := t.fired[timer]
			if c.cancelledLocked() && (fired == 0 || t.cancelSeq < fired) {
				t.retire = append(t.retire, timer)
				t.mu.Unlock()
				return zero, ErrCancelled
			}
			if fired == 0 {
				t.block()
			}
			attempt = last.Attempt + 1
		}
	} else if c.cancelledLocked() {
		t.mu.Unlock()
		return zero, ErrCancelled
	}
	if !run {
		if t.replay {
			// A replay test, or a step job's replay of what came before its step, runs
			// no new work.
			t.block()
		}
		if o.Job != nil {
			t.scheduleStep(key, attempt, o.Job)
			t.block()
		}
	}
	t.mu.Unlock()

	sctx, cancel := t.jobCtx, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		sctx, cancel = context.WithTimeout(sctx, o.Timeout)
	}
	out, err := runStep(sctx, t, name, key, attempt, fn)
	cancel()

	t.mu.Lock()
	if t.jobCtx.Err() != nil {
		// The task was lost or handed back: what fn did is not recorded here.
		t.fail(context.Cause(t.jobCtx))
	}
	if run {
		t.ranStep(out, err, o)
		t.block()
	}
	if err == nil {
		b, jerr := json.Marshal(out)
		if jerr != nil {
			t.mu.Unlock()
			return zero, fmt.Errorf("workflow: step %s: encode the result: %w", key, jerr)
		}
		t.record(headgate.Event{Kind: headgate.EventStepCompleted, Name: key, Attempt: attempt, Result: b}, nil)
		t.stepDone(o.Checkpoint)
		t.mu.Unlock()
		// What every replay returns: the recorded JSON decoded, not fn's value (a map's
		// numbers are float64, unexported fields are gone), so the code sees the same
		// result on this task as on the next.
		var rec T
		if err := json.Unmarshal(b, &rec); err != nil {
			return zero, fmt.Errorf("workflow: step %s: decode the recorded result: %w", key, err)
		}
		return rec, nil
	}
	msg := err.Error()
	if attempt > o.Retries {
		t.record(headgate.Event{Kind: headgate.EventStepFailed, Name: key, Attempt: attempt,
			Error: &headgate.WorkflowError{Message: msg}}, nil)
		t.stepDone(o.Checkpoint)
		t.mu.Unlock()
		return zero, &StepError{Step: key, Attempt: attempt, Message: msg}
	}
	now, nerr := t.store.Now(t.jobCtx)
	if nerr != nil {
		t.fail(fmt.Errorf("workflow: step %s: read the store clock: %w", key, nerr))
	}
	fire := now.Add(o.backoff(attempt))
	t.record(headgate.Event{Kind: headgate.EventStepFailed, Name: key, Attempt: attempt,
		Error: &headgate.WorkflowError{Message: msg}, FireAt: fire},
		&headgate.TimerArm{TimerID: retryTimer(key, attempt), FireAt: fire})
	t.block()
	panic("unreachable")
}

// backoff is the wait before the retry that follows a failed attempt: Backoff, doubled
// per retry up to StepBackoffCap (doubled step by step, so no shift overflows).
func (o StepOptions) backoff(attempt int) time.Duration {
	d := o.Backoff
	for i := 1; i < attempt && d < StepBackoffCap; i++ {
		d *= 2
	}
	return min(d, StepBackoffCap)
}

func retryTimer(key string, attempt int) string { return fmt.Sprintf("retry/%s/%d", key, attempt) }

func errorText(e headgate.Event) string {
	if e.Error == nil {
		return ""
	}
	return e.Error.Message
}

// Package workflowtest runs durable workflows in tests: on an embedded miniredis (or any
// Redis), with the store clock frozen, tasks run one after another in the calling
// goroutine, so a test decides when time passes and when signals arrive, and nothing
// waits on a wall clock. Advancing the clock fires the timers it makes due, at once.
//
//	env := workflowtest.New(t)
//	workflow.Register(env.Worker, "checkout", checkout)
//	env.Start("checkout", order, "order-42")
//	env.Run()                          // runs tasks until the run waits
//	env.Advance(30 * 24 * time.Hour)   // the 30-day sleep passes; its task runs
//	out, err := workflowtest.Result[Receipt](env, "order-42")
//
// workflow.Replay checks a recorded history against the current code.
package workflowtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

// Epoch is where New freezes the store clock.
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Env is a namespace of its own with a frozen store clock, a workflow client, and a
// worker that is never started: Run drives it. It belongs to the test it was made for:
// its methods fail that test.
type Env struct {
	Client *workflow.Client
	Store  *headgate.Store
	// Worker is where the test registers its workflow types (workflow.Register) and
	// job handlers before the first Run.
	Worker *worker.Worker

	t      testing.TB
	ctx    context.Context
	rdb    redis.UniversalClient
	queues []string // what Worker serves, and every NewWorker
}

// New returns an env on the embedded miniredis the test binary shares. Its worker
// serves queues, in order (the default queue when none is given): name the queues of
// steps that run as jobs of their own (workflow.StepJob) beside the workflows' queue.
func New(t testing.TB, queues ...string) *Env {
	t.Helper()
	return NewOn(t, redistest.Miniredis(t), queues...)
}

// NewOn returns an env on rdb, in a fresh namespace deleted when the test ends, whose
// worker serves queues as New's does.
func NewOn(t testing.TB, rdb redis.UniversalClient, queues ...string) *Env {
	t.Helper()
	store := rqueuetest.NewStore(t, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	if err := store.FreezeClock(ctx, Epoch); err != nil {
		t.Fatalf("workflowtest: freeze the store clock: %v", err)
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: store.Namespace(), ID: "workflowtest", Queues: queues})
	if err != nil {
		t.Fatalf("workflowtest: new worker: %v", err)
	}
	return &Env{Client: workflow.NewClientFromStore(store), Store: store, Worker: w, t: t, ctx: ctx, rdb: rdb, queues: queues}
}

// NewWorker returns another never-started worker of the env's namespace, with id, that
// serves the env's queues and the package versions given (workflow.ServeVersions;
// none: unversioned runs only): a fleet whose workers run different code. Register its
// workflow types on it and drive it with RunWith.
func (e *Env) NewWorker(id string, versions ...string) *worker.Worker {
	e.t.Helper()
	w, err := worker.New(e.rdb, &worker.Config{Namespace: e.Store.Namespace(), ID: id, Queues: e.queues})
	if err != nil {
		e.t.Fatalf("workflowtest: new worker %q: %v", id, err)
	}
	if len(versions) > 0 {
		workflow.ServeVersions(w, versions...)
	}
	return w
}

// Context returns the env's context, done when the test ends.
func (e *Env) Context() context.Context { return e.ctx }

// Start starts a run of workflowType under id with input in; it fails the test when
// the store refuses it.
func (e *Env) Start(workflowType string, in any, id string) *workflow.Run {
	e.t.Helper()
	r, err := e.Client.Start(e.ctx, workflowType, in, workflow.StartOptions{ID: id})
	if err != nil {
		e.t.Fatalf("workflowtest: start %s %q: %v", workflowType, id, err)
	}
	return r
}

// Signal sends a signal to a workflow's run.
func (e *Env) Signal(id, name string, payload any) {
	e.t.Helper()
	if err := e.Client.Signal(e.ctx, id, name, payload); err != nil {
		e.t.Fatalf("workflowtest: signal %s to %q: %v", name, id, err)
	}
}

// Run runs the tasks that are due (timers due at the frozen time fired, due jobs
// promoted) until none is left, and returns their attempts. A task that failed (a
// non-determinism, a panic of the code) is in the attempts with its error, and its
// retry waits for its backoff to pass (Advance).
func (e *Env) Run() []worker.Attempt {
	e.t.Helper()
	return e.RunWith(e.Worker)
}

// RunWith is Run with w taking the tasks: those of the queues it serves alone.
func (e *Env) RunWith(w *worker.Worker) []worker.Attempt {
	e.t.Helper()
	all, _ := e.runWith(w)
	return all
}

// runWith is RunWith that also returns when the next thing is due on the store clock
// once nothing is left to run: the earliest armed timer or scheduled job (zero when
// there is none).
func (e *Env) runWith(w *worker.Worker) ([]worker.Attempt, time.Time) {
	e.t.Helper()
	var all []worker.Attempt
	for range 100_000 {
		_, nextTimer, err := e.Store.FireTimers(e.ctx, 1000)
		if err != nil {
			e.t.Fatalf("workflowtest: fire timers: %v", err)
		}
		_, nextJob, err := e.Store.PromoteDue(e.ctx, 1000)
		if err != nil {
			e.t.Fatalf("workflowtest: promote due jobs: %v", err)
		}
		attempts, err := w.Work(e.ctx, 1)
		if err != nil {
			e.t.Fatalf("workflowtest: run tasks: %v", err)
		}
		if len(attempts) == 0 {
			next := nextTimer
			if next.IsZero() || (!nextJob.IsZero() && nextJob.Before(next)) {
				next = nextJob
			}
			return all, next
		}
		all = append(all, attempts...)
	}
	e.t.Fatalf("workflowtest: still running tasks after 100,000: a workflow that never waits?")
	return all, time.Time{}
}

// Advance lets d pass on the store clock and runs what becomes due, as workers would
// over that time: what is due now runs first (a signal's task at the time it was
// sent), then the clock steps to each timer's fire time and each scheduled job's
// due time on the way, in order, and what is due then runs before it steps on, so a
// timer armed on the way (a second sleep, a retry's backoff) fires too when it falls
// within d, at its own time.
func (e *Env) Advance(d time.Duration) []worker.Attempt {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("workflowtest: advance the clock: cannot step it back (%s)", d)
	}
	now, err := e.Store.Now(e.ctx)
	if err != nil {
		e.t.Fatalf("workflowtest: read the store clock: %v", err)
	}
	end := now.Add(d)
	var all []worker.Attempt
	for range 100_000 {
		attempts, next := e.runWith(e.Worker)
		all = append(all, attempts...)
		if next.IsZero() || !next.After(now) || next.After(end) {
			break
		}
		if err := e.Store.FreezeClock(e.ctx, next); err != nil {
			e.t.Fatalf("workflowtest: advance the clock: %v", err)
		}
		now = next
	}
	if err := e.Store.FreezeClock(e.ctx, end); err != nil {
		e.t.Fatalf("workflowtest: advance the clock: %v", err)
	}
	return append(all, e.Run()...)
}

// Status returns a workflow's status.
func (e *Env) Status(id string) headgate.WorkflowStatus {
	e.t.Helper()
	w, err := e.Store.GetWorkflow(e.ctx, id)
	if err != nil {
		e.t.Fatalf("workflowtest: workflow %q: %v", id, err)
	}
	return w.Status
}

// History returns a workflow's whole history.
func (e *Env) History(id string) []headgate.Event {
	e.t.Helper()
	h, err := e.Store.ReadHistory(e.ctx, id)
	if err != nil {
		e.t.Fatalf("workflowtest: history of %q: %v", id, err)
	}
	return h
}

// Timeline is the history of a workflow as one line per event, for test failures.
func (e *Env) Timeline(id string) string {
	e.t.Helper()
	var b strings.Builder
	for _, ev := range e.History(id) {
		fmt.Fprintf(&b, "%d %s %s", ev.Seq, ev.RecordedAt.UTC().Format(time.RFC3339), ev.Kind)
		for _, s := range []string{ev.Name, ev.TimerID, ev.ChildWorkflowID, ev.RunID} {
			if s != "" {
				fmt.Fprintf(&b, " %s", s)
			}
		}
		if ev.Queue != "" {
			fmt.Fprintf(&b, " queue=%s", ev.Queue)
		}
		if ev.Error != nil {
			fmt.Fprintf(&b, " error=%q", ev.Error.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ErrStillRunning is what Result reports for a run that has not ended.
var ErrStillRunning = errors.New("workflowtest: the run has not ended")

// Result returns a workflow's outcome as workflow.Result does, without waiting: a run
// that has not ended is ErrStillRunning (with its timeline in the message).
func Result[T any](e *Env, id string) (T, error) {
	e.t.Helper()
	var zero T
	w, err := e.Store.GetWorkflow(e.ctx, id)
	if err != nil {
		return zero, err
	}
	if !w.Status.Closed() {
		return zero, fmt.Errorf("%w: %q is %s:\n%s", ErrStillRunning, id, w.Status, e.Timeline(id))
	}
	return workflow.Result[T](e.ctx, e.Client, id)
}

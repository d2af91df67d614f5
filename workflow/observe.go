package workflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/headgate/headgate/worker"
)

// Observer sees the tasks and steps a worker runs, to trace or time them: a worker
// middleware puts one in each attempt's context with WithObserver (contrib/otel's
// WorkerMiddleware does, for its task and step spans). Its calls come from the task's
// goroutines and must be safe for concurrent use.
type Observer interface {
	// StartTask is called when a task has read the run's history and starts replaying
	// it. The context it returns is the task's: the steps' contexts derive from it. end
	// is called once the task committed (err nil) or failed (err the attempt's error).
	StartTask(ctx context.Context, info TaskInfo) (_ context.Context, end func(err error))
	// StartStep is called before each attempt of a step's function; a replay that
	// returns a recorded result runs nothing and calls nothing. The context it returns
	// is the function's. end is called with the function's error, or with an error
	// saying it panicked.
	StartStep(ctx context.Context, info StepInfo) (_ context.Context, end func(err error))
}

// TaskInfo describes a task to an Observer.
type TaskInfo struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	History      int // events of the run the task replays
}

// StepInfo describes an attempt of a step to an Observer.
type StepInfo struct {
	WorkflowID string
	RunID      string
	Name       string // as given to Step
	Key        string // scope, name and occurrence, as the history records it: "charge#2"
	Occurrence int    // 1 for the run's first step of the name in its scope
	Attempt    int    // 1, then one more per retry
}

type observerKey struct{}

// WithObserver returns a context whose workflow tasks report to o.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

func observerOf(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// observeTask reports the start of task t to the observer of ctx, if any; the returned
// function reports the end of the task with runTask's result.
func observeTask(ctx context.Context, t *task) (context.Context, func(error)) {
	o := observerOf(ctx)
	if o == nil {
		return ctx, func(error) {}
	}
	ctx, end := o.StartTask(ctx, TaskInfo{WorkflowID: t.wfID, RunID: t.row.RunID,
		WorkflowType: t.row.WorkflowType, History: len(t.history)})
	return ctx, func(err error) {
		if _, ok := errors.AsType[*worker.SettledError](err); ok {
			err = nil // committed
		}
		end(err)
	}
}

// runStep runs one attempt of a step's function, reported to the observer of ctx.
func runStep[T any](ctx context.Context, t *task, name, key string, attempt int, fn func(context.Context) (T, error)) (T, error) {
	o := observerOf(ctx)
	if o == nil {
		return fn(ctx)
	}
	occurrence, _ := strconv.Atoi(key[strings.LastIndexByte(key, '#')+1:])
	ctx, end := o.StartStep(ctx, StepInfo{WorkflowID: t.wfID, RunID: t.row.RunID, Name: name, Key: key,
		Occurrence: occurrence, Attempt: attempt})
	ended := false
	defer func() {
		if !ended {
			end(fmt.Errorf("workflow: step %s panicked", key))
		}
	}()
	out, err := fn(ctx)
	ended = true
	end(err)
	return out, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	gwredis "github.com/cschleiden/go-workflows/backend/redis"
	"github.com/cschleiden/go-workflows/client"
	gwregistry "github.com/cschleiden/go-workflows/registry"
	gwworker "github.com/cschleiden/go-workflows/worker"
	gwf "github.com/cschleiden/go-workflows/workflow"
	"github.com/redis/go-redis/v9"
)

// go-workflows (github.com/cschleiden/go-workflows) runs on its Redis backend, set up as
// its own bench does for Redis: polling intervals 0 (the backend blocks on its
// streams), default cache of workflow executors (a cached run is not replayed), logs
// off. Steps are activities, each a task of its own; the sleep is workflow.Sleep. A
// worker's concurrency bounds both its workflow tasks and its activities.

func init() {
	register(&goSystem{name: "go-workflows"}) // a workflow engine only: no job scenarios
	registerWorkflowEngine("go-workflows", openGoWorkflows)
}

type goWorkflows struct {
	backend backend.Backend
	client  *client.Client
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h discardHandler) WithGroup(string) slog.Handler           { return h }

func openGoWorkflows(ctx context.Context, addr string) (WorkflowEngine, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("go-workflows ping %s: %w", addr, err)
	}
	b, err := gwredis.NewRedisBackend(rdb, gwredis.WithBackendOptions(backend.WithLogger(slog.New(discardHandler{}))))
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("go-workflows redis backend: %w", err)
	}
	return &goWorkflows{backend: b, client: client.New(b)}, nil
}

func (g *goWorkflows) Start(ctx context.Context, in benchFlowInput) error {
	_, err := g.client.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: in.ID}, "bench_flow", in)
	return err
}

func (g *goWorkflows) StartWorker(ctx context.Context, concurrency int, hook WorkflowHook) (Worker, error) {
	opts := gwworker.DefaultOptions
	opts.WorkflowPollingInterval = 0
	opts.ActivityPollingInterval = 0
	opts.MaxParallelWorkflowTasks = concurrency
	opts.MaxParallelActivityTasks = concurrency
	w := gwworker.New(g.backend, &opts)
	step := func(ctx context.Context, id string, n int) (int, error) {
		hook(id, n)
		return n, nil
	}
	flow := func(ctx gwf.Context, in benchFlowInput) (int, error) {
		for n := 1; n <= 2; n++ {
			if _, err := gwf.ExecuteActivity[int](ctx, gwf.DefaultActivityOptions, step, in.ID, n).Get(ctx); err != nil {
				return 0, err
			}
		}
		hook(in.ID, markSleep)
		if err := gwf.Sleep(ctx, time.Duration(in.SleepMS)*time.Millisecond); err != nil {
			return 0, err
		}
		if _, err := gwf.ExecuteActivity[int](ctx, gwf.DefaultActivityOptions, step, in.ID, 3).Get(ctx); err != nil {
			return 0, err
		}
		hook(in.ID, markDone)
		return 3, nil
	}
	if err := errors.Join(w.RegisterWorkflow(flow, gwregistry.WithName("bench_flow")), w.RegisterActivity(step)); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	if err := w.Start(wctx); err != nil {
		cancel()
		return nil, fmt.Errorf("go-workflows worker start: %w", err)
	}
	return &goWorkflowsWorker{w: w, cancel: cancel}, nil
}

// Close closes the backend, which closes its Redis client.
func (g *goWorkflows) Close() error { return g.backend.Close() }

type goWorkflowsWorker struct {
	w      *gwworker.Worker
	cancel context.CancelFunc
	once   sync.Once
	err    error
}

// Stop cancels the worker's context, which stops its pollers, and waits for them.
// WaitForCompletion panics when called twice, so a second Stop returns the first's
// error.
func (w *goWorkflowsWorker) Stop() error {
	w.once.Do(func() {
		w.cancel()
		w.err = w.w.WaitForCompletion()
	})
	return w.err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The workflow scenarios run one workflow on every durable-workflow engine: three
// no-op steps with a sleep between the second and the third,
//
//	step one; step two; hook(before sleep); sleep(in.Sleep); step three; hook(done)
//
// Each step's function and the two marks call the harness's hook with the workflow's
// id, so the harness sees the same points in every engine whatever its API.
//
//   - workflow: Jobs workflows (sleep 0) started before the worker, then drained by
//     one worker of concurrency 50: workflows per second from the worker's start to
//     the last workflow's return.
//   - workflow-timer: on an idle worker, one workflow at a time with a sleep of
//     SleepMS: how late the code after the sleep ran, from the first time the code
//     reached the sleep plus the sleep, to the first call of step three.

// Workflow marks passed to a WorkflowHook, beside the step numbers 1..3.
const (
	markSleep = 10 // the code is about to sleep (called on every replay too)
	markDone  = 11 // the code returns (called again if the last task is retried)
)

// WorkflowHook is called by the bench workflow's steps (step 1..3) and marks.
type WorkflowHook func(id string, point int)

// benchFlowInput is the bench workflow's input.
type benchFlowInput struct {
	ID      string `json:"id"`
	SleepMS int    `json:"sleep_ms"`
}

// WorkflowEngine is what a durable-workflow library implements to take part. One is
// opened per scenario run (after FLUSHALL) and closed at the end of it.
type WorkflowEngine interface {
	// StartWorker starts a worker that runs the bench workflow with at most
	// concurrency tasks (workflow tasks and steps) at once, calling hook.
	StartWorker(ctx context.Context, concurrency int, hook WorkflowHook) (Worker, error)
	// Start starts one run of the bench workflow.
	Start(ctx context.Context, in benchFlowInput) error
	// Close releases the library's connections.
	Close() error
}

// WorkflowOpener connects a workflow library to the Redis server at addr.
type WorkflowOpener func(ctx context.Context, addr string) (WorkflowEngine, error)

// workflowEngines are the engines by system name; a system with one runs the workflow
// scenarios (goSystem.Run).
var workflowEngines = map[string]WorkflowOpener{}

func registerWorkflowEngine(name string, open WorkflowOpener) { workflowEngines[name] = open }

func isWorkflowKind(k Kind) bool { return k == KindWorkflow || k == KindWorkflowTimer }

// runsKind reports whether sys runs scenarios of kind k: the workflow scenarios only
// on systems with a workflow engine, the job scenarios only on job queues.
func runsKind(sys System, k Kind) bool {
	if g, ok := sys.(*goSystem); ok {
		if isWorkflowKind(k) {
			return workflowEngines[g.name] != nil
		}
		return g.open != nil
	}
	return !isWorkflowKind(k)
}

// flowMarks records, per workflow id, the first time each hook point was reached.
type flowMarks struct {
	mu    sync.Mutex
	first map[string]map[int]time.Time
	done  chan string // ids whose code returned, once each
}

func newFlowMarks(n int) *flowMarks {
	return &flowMarks{first: map[string]map[int]time.Time{}, done: make(chan string, n)}
}

func (m *flowMarks) hook(id string, point int) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.first[id]
	if p == nil {
		p = map[int]time.Time{}
		m.first[id] = p
	}
	if _, seen := p[point]; seen {
		return
	}
	p[point] = now
	if point == markDone {
		select {
		case m.done <- id:
		default: // more returns than workflows started: never block a worker
		}
	}
}

func (m *flowMarks) at(id string, point int) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.first[id][point]
	return t, ok
}

// runWorkflow runs a workflow scenario on engine e; st (-stats, else nil) counts the
// workflow scenario's workflows as jobs: started ("enqueue"), returned ("worker").
func runWorkflow(ctx context.Context, e WorkflowEngine, k Kind, p Params, st *runStats) (Result, error) {
	if k == KindWorkflowTimer {
		return workflowTimer(ctx, e, p)
	}
	return workflowE2E(ctx, e, p, st)
}

func workflowE2E(ctx context.Context, e WorkflowEngine, p Params, st *runStats) (Result, error) {
	ids := make(chan int)
	errs := make(chan error, p.Producers)
	var wg sync.WaitGroup
	for range p.Producers {
		wg.Go(func() {
			for i := range ids {
				if err := e.Start(ctx, benchFlowInput{ID: fmt.Sprintf("wf-%d", i)}); err != nil {
					errs <- err
					return
				}
				if st != nil {
					st.enqueued.Add(1)
				}
			}
		})
	}
	go func() {
		defer close(ids)
		for i := range p.Jobs {
			select {
			case ids <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := errors.Join(<-errs, ctx.Err()); err != nil {
		return Result{}, fmt.Errorf("start workflows: %w", err)
	}
	m := newFlowMarks(p.Jobs)
	if st != nil {
		st.begin(ctx, "worker")
	}
	t0 := time.Now()
	w, err := e.StartWorker(ctx, p.Concurrency, m.hook)
	if err != nil {
		return Result{}, err
	}
	for n := range p.Jobs {
		select {
		case <-m.done:
			if st != nil {
				st.handled.Add(1)
			}
		case <-ctx.Done():
			return Result{}, errors.Join(fmt.Errorf("%d of %d workflows returned: %w", n, p.Jobs, ctx.Err()), w.Stop())
		}
	}
	elapsed := time.Since(t0)
	if st != nil {
		st.end(ctx)
	}
	if err := w.Stop(); err != nil {
		return Result{}, err
	}
	return Result{Metrics: map[string]float64{mWorkflowsPerSec: float64(p.Jobs) / elapsed.Seconds(), mElapsed: elapsed.Seconds()}}, nil
}

func workflowTimer(ctx context.Context, e WorkflowEngine, p Params) (Result, error) {
	m := newFlowMarks(p.Jobs)
	w, err := e.StartWorker(ctx, p.Concurrency, m.hook)
	if err != nil {
		return Result{}, err
	}
	defer w.Stop()
	if err := sleepCtx(ctx, time.Duration(p.SettleMS)*time.Millisecond); err != nil {
		return Result{}, err
	}
	sleep := time.Duration(p.SleepMS) * time.Millisecond
	lat := make([]time.Duration, 0, p.Jobs)
	for i := range p.Jobs {
		id := fmt.Sprintf("timer-%d", i)
		if err := e.Start(ctx, benchFlowInput{ID: id, SleepMS: p.SleepMS}); err != nil {
			return Result{}, err
		}
		select {
		case <-m.done:
		case <-ctx.Done():
			return Result{}, fmt.Errorf("workflow-timer: workflow %d of %d never returned: %w", i+1, p.Jobs, ctx.Err())
		}
		slept, ok1 := m.at(id, markSleep)
		woke, ok2 := m.at(id, 3)
		if !ok1 || !ok2 {
			return Result{}, fmt.Errorf("workflow-timer: %s returned without reaching the sleep and step three", id)
		}
		lat = append(lat, woke.Sub(slept)-sleep)
	}
	if err := w.Stop(); err != nil {
		return Result{}, err
	}
	return percentiles(lat, ""), nil
}

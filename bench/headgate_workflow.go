package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/workflow"
)

// headgate's workflows are used through package workflow the way its docs show: a
// workflow.Client starts runs, a worker.Worker with the type registered runs their
// tasks, with default step options. Steps run inside the workflow task, each result
// committed (checkpointed) before the code goes on.

func init() { registerWorkflowEngine("headgate", openHeadgateWorkflows) }

const headgateFlowType = "bench_flow"

type headgateFlows struct {
	addr   string
	rdb    *redis.Client
	client *workflow.Client
	trips  *tripCounter // -stats: round trips of every client it opens; nil otherwise
}

func openHeadgateWorkflows(ctx context.Context, addr string) (WorkflowEngine, error) {
	h := &headgateFlows{addr: addr}
	if statsEnabled {
		h.trips = newTripCounter()
	}
	rdb := h.newClient()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("headgate ping %s: %w", addr, err)
	}
	c, err := workflow.NewClient(rdb, &workflow.ClientConfig{Namespace: headgateNamespace})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	h.rdb, h.client = rdb, c
	return h, nil
}

func (h *headgateFlows) newClient() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: h.addr})
	if h.trips != nil {
		c.AddHook(h.trips)
	}
	return c
}

// RoundTrips implements roundTripCounter (stats.go).
func (h *headgateFlows) RoundTrips() map[string]int64 {
	if h.trips == nil {
		return nil
	}
	return h.trips.snapshot()
}

func (h *headgateFlows) Start(ctx context.Context, in benchFlowInput) error {
	_, err := h.client.Start(ctx, headgateFlowType, in, workflow.StartOptions{ID: in.ID})
	return err
}

func (h *headgateFlows) StartWorker(ctx context.Context, concurrency int, hook WorkflowHook) (Worker, error) {
	rdb := h.newClient()
	w, err := newBenchWorker(rdb, concurrency, nil)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	step := func(ctx workflow.Context, name string, id string, n int) error {
		_, err := workflow.Step(ctx, name, func(context.Context) (int, error) {
			hook(id, n)
			return n, nil
		}, nil)
		return err
	}
	workflow.Register(w, headgateFlowType, func(ctx workflow.Context, in benchFlowInput) (int, error) {
		if err := step(ctx, "one", in.ID, 1); err != nil {
			return 0, err
		}
		if err := step(ctx, "two", in.ID, 2); err != nil {
			return 0, err
		}
		hook(in.ID, markSleep)
		if err := workflow.Sleep(ctx, "pause", time.Duration(in.SleepMS)*time.Millisecond); err != nil {
			return 0, err
		}
		if err := step(ctx, "three", in.ID, 3); err != nil {
			return 0, err
		}
		hook(in.ID, markDone)
		return 3, nil
	})
	if err := w.Start(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("headgate worker start: %w", err)
	}
	return &headgateWorker{w: w, rdb: rdb}, nil
}

func (h *headgateFlows) Close() error { return h.rdb.Close() }

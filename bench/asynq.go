package main

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"
)

// asynq is used the way its README shows: one Client for producers, one
// Server with a Handler for workers, the "default" queue, default options.
// Not passing asynq.Retention is what makes a finished task get deleted
// instead of kept as completed, matching the other systems.
//
// asynq has no partitions, so Job.Tenant is ignored and the fairness
// scenario runs all tenants through the one queue. It has no batch enqueue
// either (Client only has Enqueue/EnqueueContext), so it does not implement
// BatchEnqueuer.

func init() { registerGo("asynq", openAsynq) }

const asynqTaskType = "bench:noop"

var _ Queue = (*asynqQueue)(nil)

type asynqQueue struct {
	opt    asynq.RedisClientOpt
	client *asynq.Client
}

func openAsynq(ctx context.Context, addr string) (Queue, error) {
	opt := asynq.RedisClientOpt{Addr: addr}
	c := asynq.NewClient(opt)
	if err := c.Ping(); err != nil {
		c.Close()
		return nil, fmt.Errorf("asynq ping %s: %w", addr, err)
	}
	return &asynqQueue{opt: opt, client: c}, nil
}

func (q *asynqQueue) Enqueue(ctx context.Context, j Job) error {
	_, err := q.client.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, j.Payload))
	return err
}

func (q *asynqQueue) StartWorker(_ context.Context, concurrency int, h Handler) (Worker, error) {
	srv := asynq.NewServer(q.opt, asynq.Config{
		Concurrency: concurrency,
		// TaskCheckInterval is left at its default (1 s, slept as 0.5–1.5 s
		// with jitter when the queue is empty): idle latency is measured as
		// asynq ships.
		LogLevel: asynq.WarnLevel, // its Info lines would interleave with the harness's progress
	})
	err := srv.Start(asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		h(t.Payload())
		return nil
	}))
	if err != nil {
		return nil, fmt.Errorf("asynq server start: %w", err)
	}
	return asynqWorker{srv}, nil
}

func (q *asynqQueue) Close() error { return q.client.Close() }

type asynqWorker struct{ srv *asynq.Server }

// Stop uses Shutdown, which waits for active handlers and stops every
// background goroutine (heartbeat, recoverer, forwarder, janitor), so no
// asynq command reaches Redis after it returns.
func (w asynqWorker) Stop() error {
	w.srv.Shutdown()
	return nil
}

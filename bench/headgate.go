package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// headgate is used through its public API, the way its docs show: an
// rqueue.Client for producers (Enqueue, and EnqueueMany for batches), a
// worker.Worker with a typed handler for workers, the default queue and
// default options. Retention is rqueue's default, 0: a job is deleted as it
// succeeds, like asynq without Retention and BullMQ with removeOnComplete.
//
// Job.Tenant is the job's partition (EnqueueOpts.Partition), so the fairness
// scenario runs with one partition per tenant; every other scenario uses the
// one shared partition ("").
//
// The payload reaches the handler unchanged as the one field of the job's
// args, which rqueue encodes with msgpack (5 bytes of framing around it).

func init() { registerGo("headgate", openHeadgate) }

const (
	headgateNamespace = "bench"
	headgateKind      = "bench_noop"
)

var (
	_ Queue         = (*headgateQueue)(nil)
	_ BatchEnqueuer = (*headgateQueue)(nil)
)

// benchArgs are the args of the benchmark's one job kind.
type benchArgs struct {
	Payload []byte `msgpack:"p"`
}

func (benchArgs) Kind() string { return headgateKind }

type headgateQueue struct {
	addr   string
	rdb    *redis.Client // producers
	client *rqueue.Client
	trips  *tripCounter   // -stats: round trips of every client the queue opens; nil otherwise
	obs    *observability // headgate-observed: metrics and tracing; nil otherwise
}

func openHeadgate(ctx context.Context, addr string) (Queue, error) {
	return openHeadgateWith(ctx, addr, nil)
}

func openHeadgateWith(ctx context.Context, addr string, obs *observability) (Queue, error) {
	q := &headgateQueue{addr: addr, obs: obs}
	if statsEnabled {
		q.trips = newTripCounter()
	}
	q.rdb = q.newClient()
	if err := q.rdb.Ping(ctx).Err(); err != nil {
		q.rdb.Close()
		return nil, fmt.Errorf("headgate ping %s: %w", addr, err)
	}
	c, err := rqueue.NewClient(q.rdb, &rqueue.Config{Namespace: headgateNamespace, EnqueueMiddleware: obs.enqueueMiddleware()})
	if err != nil {
		q.rdb.Close()
		return nil, err
	}
	q.client = c
	return q, nil
}

func (q *headgateQueue) newClient() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: q.addr})
	if q.trips != nil {
		c.AddHook(q.trips)
	}
	return c
}

func enqueueOpts(j Job) *rqueue.EnqueueOpts {
	if j.Tenant == "" {
		return nil
	}
	return &rqueue.EnqueueOpts{Partition: j.Tenant}
}

func (q *headgateQueue) Enqueue(ctx context.Context, j Job) error {
	_, err := q.client.Enqueue(ctx, benchArgs{Payload: j.Payload}, enqueueOpts(j))
	return err
}

func (q *headgateQueue) EnqueueBatch(ctx context.Context, jobs []Job) error {
	params := make([]rqueue.EnqueueParams, len(jobs))
	for i, j := range jobs {
		params[i] = rqueue.EnqueueParams{Args: benchArgs{Payload: j.Payload}, Opts: enqueueOpts(j)}
	}
	_, err := q.client.EnqueueMany(ctx, params)
	return err
}

func (q *headgateQueue) StartWorker(ctx context.Context, concurrency int, h Handler) (Worker, error) {
	// A client of the worker's own, as a worker process would have; the
	// worker opens one more connection for its blocking wait for work.
	rdb := q.newClient()
	w, err := newBenchWorker(rdb, concurrency, q.obs.workerMiddleware())
	if err != nil {
		rdb.Close()
		return nil, err
	}
	worker.Handle(w, func(_ context.Context, job *worker.Job[benchArgs]) error {
		h(job.Args.Payload)
		return nil
	})
	if err := w.Start(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("headgate worker start: %w", err)
	}
	return &headgateWorker{w: w, rdb: rdb}, nil
}

// newBenchWorker is the worker of both headgate adapters (jobs and workflows), with the
// observed variants' middleware (none for the bare one).
func newBenchWorker(rdb *redis.Client, concurrency int, mw []worker.Middleware) (*worker.Worker, error) {
	return worker.New(rdb, &worker.Config{
		Namespace:   headgateNamespace,
		Concurrency: concurrency,
		// Warnings and errors only, like asynq's WarnLevel.
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Middleware: mw,
	})
}

func (q *headgateQueue) Close() error {
	q.obs.close()
	return q.rdb.Close()
}

// RoundTrips implements roundTripCounter (stats.go). The worker's blocking
// wait (BLPOP) runs on a connection the worker opens itself, without the
// hook; commandstats counts it.
func (q *headgateQueue) RoundTrips() map[string]int64 {
	if q.trips == nil {
		return nil
	}
	return q.trips.snapshot()
}

type headgateWorker struct {
	w   *worker.Worker
	rdb *redis.Client
}

// Stop is worker.Stop: it waits for running handlers and confirms their acks,
// and after it returns the worker sends Redis nothing more.
func (w *headgateWorker) Stop() error {
	err := w.w.Stop(context.Background())
	if cerr := w.rdb.Close(); err == nil {
		err = cerr
	}
	return err
}

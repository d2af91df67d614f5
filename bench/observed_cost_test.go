package main

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkObservedE2E runs the e2e scenario's shape (a preload in batches of 1,000,
// then a worker of concurrency 50 that drains it) through the bench's headgate systems:
// bare, with the Prometheus metrics (headgate-metrics), and with OpenTelemetry tracing
// of one trace in ten or of every trace besides (headgate-observed-sampled,
// headgate-observed; headgate_observed.go). It runs against the redis-server at
// HEADGATE_TEST_REDIS, which it flushes before each run: give it a server of its own.
// Under callgrind, what a job costs the process in instructions, whatever the machine's
// load, is the difference between two runs of different lengths divided by the
// difference of their jobs (the Go runtime's start and the clients' connections cancel
// out); with that redis-server under callgrind too, what it costs Redis:
//
//	go test -c -o /tmp/bench.test . && HEADGATE_TEST_REDIS=127.0.0.1:PORT GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 \
//	  valgrind --tool=callgrind /tmp/bench.test -test.run '^$' -test.bench 'ObservedE2E/headgate-observed-sampled$' -test.benchtime 20000x
func BenchmarkObservedE2E(b *testing.B) {
	addr := os.Getenv("HEADGATE_TEST_REDIS")
	if addr == "" {
		b.Skip("set HEADGATE_TEST_REDIS to the address of a redis-server of the benchmark's own: each run flushes it")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = rdb.Close() })
	for _, name := range []string{"headgate", "headgate-metrics", "headgate-observed-sampled", "headgate-observed"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			q, err := registry[name].(*goSystem).open(ctx, addr)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := q.Close(); err != nil {
					b.Error(err)
				}
			}()
			jobs := make([]Job, 1000)
			for i := range jobs {
				jobs[i] = Job{Payload: make([]byte, 100)}
			}
			for done := 0; done < b.N; done += len(jobs) {
				if err := q.(BatchEnqueuer).EnqueueBatch(ctx, jobs[:min(len(jobs), b.N-done)]); err != nil {
					b.Fatal(err)
				}
			}
			var handled atomic.Int64
			drained := make(chan struct{})
			b.ResetTimer()
			w, err := q.StartWorker(ctx, 50, func([]byte) {
				if handled.Add(1) == int64(b.N) {
					close(drained)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			<-drained
			b.StopTimer()
			if err := w.Stop(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

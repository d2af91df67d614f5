//go:build unix

package headgateotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type noopArgs struct {
	Payload []byte `msgpack:"p"`
}

func (noopArgs) Kind() string { return "noop" }

// BenchmarkEndToEnd drains a preloaded backlog of no-op jobs with one worker of
// concurrency 50, bare (plain) and observed: metrics has Metrics' instruments (read by a
// manual reader) on the producer and the worker; sampled adds tracing of one trace in
// ten (ParentBased(TraceIDRatioBased(0.1)), a common production setting) and observed of
// every trace: the jobs enqueued through EnqueueMiddleware, their attempts traced by
// WorkerMiddleware, the spans batched to an exporter that drops them. They run on one
// redis-server of the benchmark's own:
//
//	go test -run '^$' -bench EndToEnd -benchtime 20000x -count 6 .
//
// (-count runs each one its times in a row, so a change of the machine's load between
// them moves jobs/s; allocs/op and cpu-µs/job it moves least.)
//
// cpu-µs/job is this process's CPU (getrusage, user and system) from the worker's Start
// to its last handled job: what the instruments cost, and the figure the load of a
// shared machine moves least. jobs/s is the throughput; allocs/op (per job) counts the
// worker phase only, since the preload is outside the timer; gc/10kjobs is the garbage
// collections in that phase.
//
// With HEADGATE_TEST_REDIS set the benchmark uses that server instead, so that it can
// run under valgrind, which a redis-server child of the process upsets. The instructions
// a job costs the process, whatever the load, are then the difference between two runs
// of different lengths divided by the difference of their jobs (enqueue and drain):
//
//	HEADGATE_TEST_REDIS=127.0.0.1:6379 GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 \
//	  valgrind --tool=callgrind ./otel.test -test.run '^$' -test.bench 'EndToEnd/sampled$' -test.benchtime 20000x
func BenchmarkEndToEnd(b *testing.B) {
	var rdb redis.UniversalClient
	if os.Getenv(redistest.EnvAddr) != "" {
		rdb = redistest.Shared(b) // a server outside, for a run under valgrind
	} else {
		rdb = redistest.Start(b).Client(b)
	}
	var runs atomic.Int64
	for _, v := range []struct {
		name    string
		metrics bool
		sampler sdktrace.Sampler // nil: no tracing
	}{
		{name: "plain"},
		{name: "metrics", metrics: true},
		{name: "sampled", metrics: true, sampler: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))},
		{name: "observed", metrics: true, sampler: sdktrace.AlwaysSample()},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			ns := fmt.Sprintf("bench-e2e-%d-%d", time.Now().UnixNano(), runs.Add(1))
			ccfg := rqueue.Config{Namespace: ns}
			wcfg := worker.Config{Namespace: ns, Concurrency: 50, Logger: slog.New(slog.DiscardHandler)}
			if v.metrics {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				metrics, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
				mustOK(b, err)
				ccfg.EnqueueMiddleware = append(ccfg.EnqueueMiddleware, metrics.EnqueueMiddleware())
				wcfg.Middleware = append(wcfg.Middleware, metrics.WorkerMiddleware(0))
			}
			if v.sampler != nil {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(v.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				cfg := &headgateotel.Config{TracerProvider: tp}
				ccfg.EnqueueMiddleware = append(ccfg.EnqueueMiddleware, headgateotel.EnqueueMiddleware(cfg))
				wcfg.Middleware = append(wcfg.Middleware, headgateotel.WorkerMiddleware(cfg))
			}
			client, err := rqueue.NewClient(rdb, &ccfg)
			mustOK(b, err)
			const batch = 1000
			params := make([]rqueue.EnqueueParams, 0, batch)
			for i := 0; i < b.N; i += batch {
				params = params[:0]
				for range min(batch, b.N-i) {
					params = append(params, rqueue.EnqueueParams{Args: noopArgs{Payload: []byte("x")}})
				}
				_, err := client.EnqueueMany(ctx, params)
				mustOK(b, err)
			}
			w, err := worker.New(rdb, &wcfg)
			mustOK(b, err)
			var handled atomic.Int64
			done := make(chan struct{})
			worker.Handle(w, func(context.Context, *worker.Job[noopArgs]) error {
				if handled.Add(1) == int64(b.N) {
					close(done)
				}
				return nil
			})
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, t0 := cpuTime(b), time.Now()
			mustOK(b, w.Start(ctx))
			<-done
			elapsed, cpu := time.Since(t0), cpuTime(b)-cpu0
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			mustOK(b, w.Stop(ctx))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
			b.ReportMetric(float64(ms1.NumGC-ms0.NumGC)*10000/float64(b.N), "gc/10kjobs")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	mustOK(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

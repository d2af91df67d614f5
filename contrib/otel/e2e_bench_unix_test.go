//go:build unix

package headgateotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
// concurrency 50, bare (plain) and observed: the jobs enqueued through
// EnqueueMiddleware, their attempts traced by WorkerMiddleware (every span sampled,
// batched to an exporter that drops them) and measured by Metrics (read by a manual
// reader). Both run on one redis-server of the benchmark's own:
//
//	go test -run '^$' -bench EndToEnd -benchtime 20000x -count 6 .
//
// (-count runs each one its times in a row, so a change of the machine's load between
// them moves jobs/s; allocs/op and cpu-µs/job it moves least.)
//
// cpu-µs/job is this process's CPU (getrusage, user and system) from the worker's Start
// to its last handled job: what the instruments cost, and the figure the load of a
// shared machine moves least. jobs/s is the throughput; allocs/op (per job) counts the
// worker phase only, since the preload is outside the timer.
func BenchmarkEndToEnd(b *testing.B) {
	rdb := redistest.Start(b).Client(b)
	var runs atomic.Int64
	for _, observed := range []bool{false, true} {
		name := "plain"
		if observed {
			name = "observed"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			ns := fmt.Sprintf("bench-e2e-%d", runs.Add(1))
			ccfg := rqueue.Config{Namespace: ns}
			wcfg := worker.Config{Namespace: ns, Concurrency: 50, Logger: slog.New(slog.DiscardHandler)}
			if observed {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				metrics, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
				mustOK(b, err)
				cfg := &headgateotel.Config{TracerProvider: tp}
				ccfg.EnqueueMiddleware = []rqueue.EnqueueMiddleware{metrics.EnqueueMiddleware(), headgateotel.EnqueueMiddleware(cfg)}
				wcfg.Middleware = []worker.Middleware{metrics.WorkerMiddleware(0), headgateotel.WorkerMiddleware(cfg)}
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
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, t0 := cpuTime(b), time.Now()
			mustOK(b, w.Start(ctx))
			<-done
			elapsed, cpu := time.Since(t0), cpuTime(b)-cpu0
			b.StopTimer()
			mustOK(b, w.Stop(ctx))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	mustOK(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

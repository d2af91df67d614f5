//go:build unix

package headgateprom_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type noopArgs struct {
	Payload []byte `msgpack:"p"`
}

func (noopArgs) Kind() string { return "noop" }

// BenchmarkEndToEnd drains a preloaded backlog of no-op jobs with one worker of
// concurrency 50, bare (plain) and with the instruments on the producer and the worker
// (metrics), on a redis-server of its own (or HEADGATE_TEST_REDIS's, for a run under
// valgrind, as contrib/otel's BenchmarkEndToEnd says):
//
//	go test -run '^$' -bench EndToEnd -benchtime 20000x -count 6 .
//
// cpu-µs/job is this process's CPU (getrusage, user and system) from the worker's Start
// to its last handled job, the figure the load of a shared machine moves least; jobs/s
// the throughput; allocs/op (per job) the worker phase's.
func BenchmarkEndToEnd(b *testing.B) {
	var rdb redis.UniversalClient
	if os.Getenv(redistest.EnvAddr) != "" {
		rdb = redistest.Shared(b)
	} else {
		rdb = redistest.Start(b).Client(b)
	}
	var runs atomic.Int64
	for _, withMetrics := range []bool{false, true} {
		name := "plain"
		if withMetrics {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			ns := fmt.Sprintf("bench-e2e-%d-%d", time.Now().UnixNano(), runs.Add(1))
			ccfg := rqueue.Config{Namespace: ns}
			wcfg := worker.Config{Namespace: ns, Concurrency: 50, Logger: slog.New(slog.DiscardHandler)}
			if withMetrics {
				m := headgateprom.NewMetrics(nil)
				prometheus.NewRegistry().MustRegister(m)
				ccfg.EnqueueMiddleware = []rqueue.EnqueueMiddleware{m.EnqueueMiddleware()}
				wcfg.Middleware = []worker.Middleware{m.WorkerMiddleware(0)}
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

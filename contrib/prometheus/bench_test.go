package headgateprom_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
)

// BenchmarkEndToEnd drains a preloaded backlog of no-op jobs with one worker of
// concurrency 50 on a redis-server of its own, with and without the metrics middleware,
// from Start until Stop confirmed the last ack: jobs/s is what the instruments cost.
func BenchmarkEndToEnd(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		name := "plain"
		if withMetrics {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) { benchEndToEnd(b, withMetrics) })
	}
}

func benchEndToEnd(b *testing.B, withMetrics bool) {
	rdb := redistest.Start(b).Client(b)
	ctx := context.Background()
	ns := fmt.Sprintf("bench-%d", b.N)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	mustOK(b, err)
	const batch = 1000
	for i := 0; i < b.N; i += batch {
		envs := make([]headgate.Envelope, 0, batch)
		for j := i; j < min(i+batch, b.N); j++ {
			envs = append(envs, headgate.Envelope{ID: fmt.Sprintf("j%09d", j), Kind: "noop", Payload: []byte{0x80}})
		}
		_, err := store.Enqueue(ctx, envs...)
		mustOK(b, err)
	}
	cfg := &worker.Config{Namespace: ns, Concurrency: 50, Logger: slog.New(slog.DiscardHandler)}
	if withMetrics {
		m := headgateprom.NewMetrics(nil)
		prometheus.NewRegistry().MustRegister(m)
		cfg.Middleware = []worker.Middleware{m.WorkerMiddleware(0)}
	}
	w, err := worker.New(rdb, cfg)
	mustOK(b, err)
	var handled atomic.Int64
	done := make(chan struct{})
	worker.HandleFunc(w, "noop", func(context.Context, *headgate.Claim) error {
		if handled.Add(1) == int64(b.N) {
			close(done)
		}
		return nil
	})
	b.ResetTimer()
	t0 := time.Now()
	mustOK(b, w.Start(ctx))
	<-done
	mustOK(b, w.Stop(ctx))
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkWorkerMiddleware is the CPU one attempt pays for the instruments: the
// middleware around a no-op handler, against the handler alone.
func BenchmarkWorkerMiddleware(b *testing.B) {
	noop := func(context.Context, *headgate.Claim) error { return nil }
	m := headgateprom.NewMetrics(nil)
	claim := &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "noop", Queue: "default",
		ScheduledAt: time.UnixMilli(1000)}, ExpiresAt: time.UnixMilli(31000)}
	ctx := context.Background()
	for name, h := range map[string]worker.HandlerFunc{"plain": noop, "metrics": m.WorkerMiddleware(0)(noop)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h(ctx, claim)
			}
		})
	}
}

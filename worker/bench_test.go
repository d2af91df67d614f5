package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// roundTrips is a go-redis hook that counts round trips: a command or a pipeline each.
// The worker's blocking wait runs on a client of its own and is not counted; a draining
// worker does not wait.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// benchServer starts a redis-server of the benchmark's own, so that nothing else loads it.
func benchServer(b *testing.B) (*redis.Client, *roundTrips) {
	b.Helper()
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	rt := &roundTrips{}
	rdb.AddHook(rt)
	return rdb, rt
}

// BenchmarkEndToEnd drains a preloaded backlog of no-op jobs with one worker of
// concurrency 50: from Start until the store confirmed the last ack. jobs/s is the
// throughput, roundtrips/job counts every Redis round trip the worker made (admissions,
// acks, renewals, maintenance).
func BenchmarkEndToEnd(b *testing.B) {
	rdb, rt := benchServer(b)
	ctx := context.Background()
	ns := fmt.Sprintf("bench-e2e-%d", b.N)
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
	w, err := worker.New(rdb, &worker.Config{Namespace: ns, Concurrency: 50, Logger: slog.New(slog.DiscardHandler)})
	mustOK(b, err)
	worker.HandleFunc(w, "noop", func(context.Context, *headgate.Claim) error { return nil })
	var acked atomic.Int64
	done := make(chan struct{})
	worker.OnAck(w, func(string, headgate.Outcome, headgate.State, error) {
		if acked.Add(1) == int64(b.N) {
			close(done)
		}
	})
	mustOK(b, rdb.ConfigResetStat(ctx).Err())
	cpu0 := redisCPU(b, rdb)
	rt.n.Store(0)
	b.ResetTimer()
	t0 := time.Now()
	mustOK(b, w.Start(ctx))
	<-done
	elapsed := time.Since(t0)
	b.StopTimer()
	trips := rt.n.Load()
	b.ReportMetric(100*(redisCPU(b, rdb)-cpu0)/elapsed.Seconds(), "redis-cpu-%")
	mustOK(b, w.Stop(ctx))
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/job")
	b.ReportMetric(scriptMicros(b, rdb)/float64(b.N), "redis-script-µs/job")
}

// scriptMicros is the time Redis spent running scripts since the last CONFIG RESETSTAT,
// in µs: per job, it is the floor the store's scripts put under a job's cost on this
// server, whatever the worker does.
func scriptMicros(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	mustOK(b, err)
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_fcall" && name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for kv := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}

// redisCPU is the CPU time the server has used, in seconds.
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	mustOK(b, err)
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_user" || name == "used_cpu_sys") {
			n, _ := strconv.ParseFloat(v, 64)
			total += n
		}
	}
	return total
}

// BenchmarkIdleLatency measures how long an idle worker takes to start a job: from just
// before the Enqueue call until the handler runs. Before each sample the worker has acked
// the previous job and sits in its blocking wait for work.
func BenchmarkIdleLatency(b *testing.B) {
	rdb, _ := benchServer(b)
	ctx := context.Background()
	ns := fmt.Sprintf("bench-idle-%d", b.N)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	mustOK(b, err)
	w, err := worker.New(rdb, &worker.Config{Namespace: ns, Concurrency: 10, Logger: slog.New(slog.DiscardHandler)})
	mustOK(b, err)
	var sent atomic.Int64
	started := make(chan time.Duration, 1)
	worker.HandleFunc(w, "noop", func(context.Context, *headgate.Claim) error {
		started <- time.Duration(time.Now().UnixNano() - sent.Load())
		return nil
	})
	acked := make(chan struct{}, 1)
	worker.OnAck(w, func(string, headgate.Outcome, headgate.State, error) { acked <- struct{}{} })
	mustOK(b, w.Start(ctx))
	defer func() { mustOK(b, w.Stop(ctx)) }()
	time.Sleep(50 * time.Millisecond) // start-up: the first admission and the duties' first passes

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Let the worker get back into its wait: the bench measures a wake-up, not a
		// worker that happens to be admitting anyway.
		time.Sleep(2 * time.Millisecond)
		sent.Store(time.Now().UnixNano())
		_, err := store.Enqueue(ctx, headgate.Envelope{ID: fmt.Sprintf("j%09d", i), Kind: "noop"})
		mustOK(b, err)
		lat = append(lat, <-started)
		<-acked
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkCancelLatency measures how long an operator's cancel takes to reach a running
// handler: from just before the Cancel call until the handler's context is done (cause
// ErrCancelled). Leases last an hour, so no renewal can be what delivers it.
func BenchmarkCancelLatency(b *testing.B) {
	b.Run("miniredis", func(b *testing.B) {
		m := miniredis.RunT(b)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		b.Cleanup(func() { _ = rdb.Close() })
		benchCancelLatency(b, rdb)
	})
	b.Run("redis", func(b *testing.B) {
		rdb, _ := benchServer(b)
		benchCancelLatency(b, rdb)
	})
}

func benchCancelLatency(b *testing.B, rdb *redis.Client) {
	ctx := context.Background()
	ns := fmt.Sprintf("bench-cancel-%d", b.N)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	mustOK(b, err)
	w, err := worker.New(rdb, &worker.Config{Namespace: ns, Concurrency: 1, Lease: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	mustOK(b, err)
	started := make(chan struct{}, 1)
	cancelled := make(chan time.Time, 1)
	worker.HandleFunc(w, "wait", func(ctx context.Context, _ *headgate.Claim) error {
		started <- struct{}{}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), worker.ErrCancelled) {
			b.Errorf("cause = %v, want ErrCancelled", context.Cause(ctx))
		}
		cancelled <- time.Now()
		return nil
	})
	mustOK(b, w.Start(ctx))
	defer func() { mustOK(b, w.Stop(ctx)) }()

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("j%09d", i)
		_, err := store.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "wait"})
		mustOK(b, err)
		<-started
		t0 := time.Now()
		mustOK(b, store.Cancel(ctx, id))
		lat = append(lat, (<-cancelled).Sub(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// reportLatency reports the median and the 99th percentile of lat, in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

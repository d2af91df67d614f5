package rqueue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

// BenchmarkEnqueueProducers reports the rate, the call latency and the client's cost of
// single Enqueue calls from one, eight and 32 goroutines on a redis-server: the case
// where concurrent calls share script calls (32: enough to have a second call pipelined
// beside the first). ns/op and allocs/op are per job, for the whole process (the Redis
// client's work included, the server's not); cpu-µs/job is the process's CPU time per
// job where the system reports it, jobs/call the jobs per command sent to Redis.
func BenchmarkEnqueueProducers(b *testing.B) {
	for _, producers := range []int{1, 8, 32} {
		b.Run(fmt.Sprint("producers=", producers), func(b *testing.B) {
			rdb := redistest.Shared(b)
			var calls commandCounter
			rdb.AddHook(&calls)
			client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: redistest.Namespace(b)})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			args := emailArgs{To: "a@example.com", Subject: "hi"}
			if _, err := client.Enqueue(ctx, args, nil); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			lat := make([][]time.Duration, producers)
			for p := range lat {
				lat[p] = make([]time.Duration, 0, b.N/producers+1)
			}
			errs := make([]error, producers)
			var wg sync.WaitGroup
			b.ReportAllocs()
			cpu0 := processCPU()
			calls0 := calls.n.Load()
			b.ResetTimer()
			for p := range producers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if _, err := client.Enqueue(ctx, args, nil); err != nil {
							errs[p] = err
							return
						}
						lat[p] = append(lat[p], time.Since(t0))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu := processCPU() - cpu0
			roundTrips := calls.n.Load() - calls0
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			at := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))].Nanoseconds()) / 1e3 }
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(at(0.50), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
			b.ReportMetric(float64(b.N)/float64(roundTrips), "jobs/call")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/job")
			}
		})
	}
}

// commandCounter is a go-redis hook that counts the commands a client sends.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

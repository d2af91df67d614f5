package rqueue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

// BenchmarkEnqueueProducers reports the rate and the call latency of single Enqueue
// calls from one, eight and 32 goroutines on a redis-server: the case where concurrent
// calls share script calls (32: enough to have a second call pipelined beside the first).
func BenchmarkEnqueueProducers(b *testing.B) {
	for _, producers := range []int{1, 8, 32} {
		b.Run(fmt.Sprint("producers=", producers), func(b *testing.B) {
			client, err := rqueue.NewClient(redistest.Shared(b), &rqueue.Config{Namespace: redistest.Namespace(b)})
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
			errs := make([]error, producers)
			var wg sync.WaitGroup
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
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			at := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))].Microseconds()) }
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(at(0.50), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
		})
	}
}

package headgate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// BenchmarkWhy reports the cost of explaining an available job at the back of a ring of
// 1,000 partitions (why.lua reads 256 of them), with 64 live workers of its queue, and of
// one heartbeat: the Redis time per call.
func BenchmarkWhy(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	fill(b, s, "w", 10_000, 1000)
	for i := range 64 {
		if _, err := s.Heartbeat(ctx, headgate.Heartbeat{ID: fmt.Sprint("w", i), Queues: []string{headgate.QueueDefault},
			Kinds: []string{"other", "bench"}, Liveness: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("why", func(b *testing.B) {
		redisCPU(b, s)
		b.ResetTimer()
		for range b.N {
			e, err := s.Why(ctx, "w-00009999", nil)
			if err != nil {
				b.Fatal(err)
			}
			if r := e.Reasons[len(e.Reasons)-1]; r.Reason != headgate.WhyPartitionTurn || r.Partitions != 1000 {
				b.Fatalf("why: %+v", e.Reasons)
			}
		}
		b.ReportMetric(redisCPU(b, s)/float64(b.N), "redis-µs/call")
	})
	b.Run("heartbeat", func(b *testing.B) {
		hb := headgate.Heartbeat{ID: "w0", Queues: []string{headgate.QueueDefault}, Kinds: []string{"bench"}, Liveness: time.Hour}
		redisCPU(b, s)
		b.ResetTimer()
		for range b.N {
			if _, err := s.Heartbeat(ctx, hb); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(redisCPU(b, s)/float64(b.N), "redis-µs/call")
	})
}

package headgate_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

// benchStore returns a store on a private redis-server, so a benchmark's backlog and
// timing are its own.
func benchStore(b *testing.B) *headgate.Store {
	b.Helper()
	srv := redistest.Start(b)
	s, err := headgate.NewStore(srv.Client(b), &headgate.StoreConfig{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchJobs(prefix string, n, partitions int) []headgate.Envelope {
	jobs := make([]headgate.Envelope, n)
	for i := range jobs {
		jobs[i] = headgate.Envelope{ID: fmt.Sprintf("%s-%08d", prefix, i), Kind: "bench",
			Payload: []byte(`{"n":1}`), PartitionKey: fmt.Sprint("p", i%partitions)}
	}
	return jobs
}

func fill(b *testing.B, s *headgate.Store, prefix string, n, partitions int) {
	b.Helper()
	ctx := context.Background()
	jobs := benchJobs(prefix, n, partitions)
	for i := 0; i < n; i += 1000 {
		if _, err := s.Enqueue(ctx, jobs[i:min(i+1000, n)]...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueue reports enqueue throughput, one job a call and in batches.
func BenchmarkEnqueue(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprint("batch=", batch), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			jobs := benchJobs("e", b.N*batch, 100)
			redisCPU(b, s)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Enqueue(ctx, jobs[i*batch:(i+1)*batch]...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(redisCPU(b, s)/float64(b.N*batch), "redis-µs/job")
		})
	}
}

// BenchmarkAdmit reports the cost of admitting a job at a small and a large backlog;
// admission must cost the same whatever the backlog. Admitted jobs go back (rate
// limited, outside the timer) so the backlog stays the same size.
func BenchmarkAdmit(b *testing.B) {
	for _, backlog := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint("backlog=", backlog), func(b *testing.B) {
			s := benchStore(b)
			fill(b, s, "a", backlog, 100)
			benchAdmit(b, s, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
				Capacity: 50, Lease: time.Minute})
		})
	}
}

func benchAdmit(b *testing.B, s *headgate.Store, req headgate.AdmitRequest) {
	b.Helper()
	ctx := context.Background()
	admitted := 0
	var cpu float64
	redisCPU(b, s)
	b.ResetTimer()
	for range b.N {
		claims, err := s.Admit(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(claims) == 0 {
			b.Fatal("nothing admitted")
		}
		admitted += len(claims)
		b.StopTimer()
		cpu += redisCPU(b, s)
		acks := make([]headgate.AckRequest, len(claims))
		for i, c := range claims {
			acks[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeRateLimited}
		}
		if _, err := s.AckMany(ctx, acks); err != nil {
			b.Fatal(err)
		}
		redisCPU(b, s) // the acks are not admission's cost
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(admitted), "ns/job")
	b.ReportMetric(cpu/float64(admitted), "redis-µs/job")
}

// BenchmarkAck reports the cost of acking admitted jobs, 50 per call.
func BenchmarkAck(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	acked := 0
	var cpu float64
	for i := range b.N {
		b.StopTimer()
		if _, err := s.Enqueue(ctx, benchJobs(fmt.Sprint("k", i), 50, 10)...); err != nil {
			b.Fatal(err)
		}
		claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
			Capacity: 50, Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		acks := make([]headgate.AckRequest, len(claims))
		for i, c := range claims {
			acks[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess}
		}
		redisCPU(b, s)
		b.StartTimer()
		if _, err := s.AckMany(ctx, acks); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += redisCPU(b, s)
		b.StartTimer()
		acked += len(acks)
	}
	b.ReportMetric(float64(acked)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(cpu/float64(acked), "redis-µs/job")
}

var usecRE = regexp.MustCompile(`cmdstat_(evalsha|eval):calls=(\d+),usec=(\d+)`)

// redisCPU returns the microseconds the server spent running scripts since the last
// reset (INFO commandstats), then resets the counters. It measures the server's work,
// which the client's timing on a shared machine does not.
func redisCPU(b *testing.B, s *headgate.Store) float64 {
	b.Helper()
	ctx := context.Background()
	info, err := s.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, m := range usecRE.FindAllStringSubmatch(info, -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		total += v
	}
	if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return total
}

// BenchmarkAdmitPastBlockedWork compares admission for a worker that has, in front of
// its own work, 100k jobs pinned to another worker and a partition whose rate class is
// empty, with admission that has neither. Neither may cost the worker a scan.
func BenchmarkAdmitPastBlockedWork(b *testing.B) {
	for _, blocked := range []bool{false, true} {
		b.Run(fmt.Sprint("blocked=", blocked), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			if blocked {
				pinned := benchJobs("pinned", 100_000, 100)
				empty := benchJobs("empty", 1_000, 1)
				for i := range pinned {
					pinned[i].StickyWorker, pinned[i].Priority = "other", 100
				}
				for i := range empty {
					empty[i].RateClass, empty[i].PartitionKey = "empty", "blocked"
				}
				if err := s.SetRateLimit(ctx, "empty", headgate.RateLimit{Limit: 1, Window: 24 * time.Hour, Burst: 1}); err != nil {
					b.Fatal(err)
				}
				for _, jobs := range [][]headgate.Envelope{pinned, empty} {
					for i := 0; i < len(jobs); i += 1000 {
						if _, err := s.Enqueue(ctx, jobs[i:min(i+1000, len(jobs))]...); err != nil {
							b.Fatal(err)
						}
					}
				}
				// Spend the class's only token, so the blocked partition stays in front.
				if _, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l0", Queues: []string{"default"},
					Capacity: 1, Lease: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			fill(b, s, "own", 10_000, 100)
			benchAdmit(b, s, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
				Capacity: 50, Lease: time.Minute})
		})
	}
}

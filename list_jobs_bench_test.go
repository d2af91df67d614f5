package headgate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/headgate/headgate"
)

// cancelAll fills a store with n jobs over the given partitions and cancels them all,
// through the transitions: n terminal jobs in the indexes.
func cancelAll(b *testing.B, s *headgate.Store, n, partitions int) {
	b.Helper()
	fill(b, s, "t", n, partitions)
	res, err := s.BulkCancel(context.Background(),
		headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil)
	if err != nil || res.Moved != int64(n) {
		b.Fatalf("cancel %d jobs: %+v, %v", n, res, err)
	}
}

// BenchmarkListJobsFiltered reports the cost of a page of 50 terminal jobs of one
// partition, newest first, from the start and from the middle of the listing, over 1k
// and 1M terminal jobs: it should not grow with the backlog.
func BenchmarkListJobsFiltered(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint("terminal=", n), func(b *testing.B) {
			s := benchStore(b)
			cancelAll(b, s, n, 10)
			ctx := context.Background()
			f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled, Partition: "p3"}
			// A cursor half way through the partition's jobs.
			mid := headgate.Page{Limit: n / 20}
			page, err := s.ListJobs(ctx, f, headgate.Page{Limit: min(n/20, headgate.ListLimitMax)})
			if err != nil {
				b.Fatal(err)
			}
			mid.Cursor, mid.Limit = page.Next, 50
			for _, p := range []struct {
				name string
				page headgate.Page
			}{{"first", headgate.Page{Limit: 50}}, {"middle", mid}} {
				b.Run(p.name, func(b *testing.B) {
					redisCPU(b, s)
					b.ResetTimer()
					for range b.N {
						page, err := s.ListJobs(ctx, f, p.page)
						if err != nil || len(page.Jobs) != 50 {
							b.Fatalf("page: %d jobs, %v", len(page.Jobs), err)
						}
					}
					b.StopTimer()
					b.ReportMetric(redisCPU(b, s)/float64(b.N), "redis-µs/page")
				})
			}
		})
	}
}

// BenchmarkBulkRetry reports the throughput of retrying 100k cancelled jobs by filter,
// in batches of 1,000.
func BenchmarkBulkRetry(b *testing.B) {
	const n = 100_000
	s := benchStore(b)
	ctx := context.Background()
	var retried int64
	var usec, calls float64
	for i := range b.N {
		b.StopTimer()
		fill(b, s, fmt.Sprint("r", i), n, 100)
		if _, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil {
			b.Fatal(err)
		}
		redisCPU(b, s)
		b.StartTimer()
		res, err := s.BulkRetry(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}, nil)
		if err != nil || res.Moved != n {
			b.Fatalf("retry: %+v, %v", res, err)
		}
		retried += res.Moved
		b.StopTimer()
		u, c := redisWork(b, s)
		usec, calls = usec+u, calls+c
		if _, err := s.BulkDelete(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(retried)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(usec/float64(retried), "redis-µs/job")
	b.ReportMetric(calls/float64(retried), "commands/job")
}

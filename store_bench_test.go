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
	var cpu, calls float64
	redisCPU(b, s)
	b.ResetTimer()
	for i := range b.N {
		req.LeaseID = fmt.Sprint("l", i) // a lease id per call: a second call under one is a repeat
		claims, err := s.Admit(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(claims) == 0 {
			b.Fatal("nothing admitted")
		}
		admitted += len(claims)
		b.StopTimer()
		u, n := redisWork(b, s)
		cpu, calls = cpu+u, calls+n
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
	b.ReportMetric(calls/float64(admitted), "redis-cmds/job")
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
		claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: fmt.Sprint("l", i), Queues: []string{"default"},
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

var (
	usecRE  = regexp.MustCompile(`cmdstat_(fcall|evalsha|eval):calls=(\d+),usec=(\d+)`)
	callsRE = regexp.MustCompile(`cmdstat_([a-z|]+):calls=(\d+)`)
)

// redisCPU returns the microseconds the server spent running scripts since the last
// reset (INFO commandstats), then resets the counters. It measures the server's work,
// which the client's timing on a shared machine does not.
func redisCPU(b *testing.B, s *headgate.Store) float64 {
	usec, _ := redisWork(b, s)
	return usec
}

// redisWork is redisCPU with the number of commands the scripts ran (every command but
// the scripts themselves and the benchmark's own INFO and CONFIG): a count that, unlike
// time, does not depend on the machine's load.
func redisWork(b *testing.B, s *headgate.Store) (usec, calls float64) {
	b.Helper()
	ctx := context.Background()
	info, err := s.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range usecRE.FindAllStringSubmatch(info, -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		usec += v
	}
	for _, m := range callsRE.FindAllStringSubmatch(info, -1) {
		switch m[1] {
		case "fcall", "function|load", "eval", "evalsha", "info", "config|resetstat", "config", "script|load", "script":
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		calls += v
	}
	if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return usec, calls
}

// BenchmarkAdmitPastBlockedWork compares admission for a worker that has, in front of
// its own work, 100k jobs pinned to another worker ("pinned"), or 100k jobs of a rate
// class with no tokens at the head of one of its own partitions ("empty-class"), with
// admission that has neither ("plain"). Neither may cost the worker a scan: the pinned
// jobs are in rings it never reads, and the empty class's jobs are parked aside once
// (outside the timer, reported as parking-µs/job) and then cost admission nothing.
func BenchmarkAdmitPastBlockedWork(b *testing.B) {
	for _, blocked := range []string{"plain", "pinned", "empty-class"} {
		b.Run("blocked="+blocked, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			enqueue := func(jobs []headgate.Envelope) {
				for i := 0; i < len(jobs); i += 1000 {
					if _, err := s.Enqueue(ctx, jobs[i:min(i+1000, len(jobs))]...); err != nil {
						b.Fatal(err)
					}
				}
			}
			switch blocked {
			case "pinned":
				pinned := benchJobs("pinned", 100_000, 100)
				for i := range pinned {
					pinned[i].StickyWorker, pinned[i].Priority = "other", 100
				}
				enqueue(pinned)
			case "empty-class":
				if err := s.SetRateLimit(ctx, "empty", headgate.RateLimit{Limit: 1, Window: 24 * time.Hour, Burst: 1}); err != nil {
					b.Fatal(err)
				}
				// Spend the class's only token.
				spend := headgate.Envelope{ID: "spend", Kind: "bench", Queue: "spend", RateClass: "empty"}
				if _, err := s.Enqueue(ctx, spend); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l0", Queues: []string{"spend"},
					Capacity: 1, Lease: time.Hour}); err != nil {
					b.Fatal(err)
				}
				empty := benchJobs("empty", 100_000, 1) // all in p0, ahead of its free jobs
				for i := range empty {
					empty[i].RateClass, empty[i].Priority = "empty", 100
				}
				enqueue(empty)
			}
			fill(b, s, "own", 10_000, 100)
			req := headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"default"},
				Capacity: 50, Lease: time.Minute}
			parking := 0.0
			if blocked == "empty-class" {
				parking = parkAll(b, s, req, "hg:{bench}:parked:empty", 100_000)
			}
			benchAdmit(b, s, req)
			if parking > 0 {
				b.ReportMetric(parking, "parking-µs/job")
			}
		})
	}
}

// parkAll admits (handing the jobs back) until admission has parked n jobs of the
// class whose parking ZSET is key, and returns what parking cost the server per job.
func parkAll(b *testing.B, s *headgate.Store, req headgate.AdmitRequest, key string, n int64) float64 {
	b.Helper()
	ctx := context.Background()
	redisCPU(b, s)
	var cpu float64
	for calls := 0; ; calls++ {
		parked, err := s.Client().ZCard(ctx, key).Result()
		if err != nil {
			b.Fatal(err)
		}
		if parked == n {
			break
		}
		if calls > int(n) {
			b.Fatalf("%d of %d jobs parked after %d calls", parked, n, calls)
		}
		req.LeaseID = fmt.Sprint("park", calls)
		claims, err := s.Admit(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		cpu += redisCPU(b, s)
		acks := make([]headgate.AckRequest, len(claims))
		for i, c := range claims {
			acks[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeRateLimited}
		}
		if len(acks) > 0 {
			if _, err := s.AckMany(ctx, acks); err != nil {
				b.Fatal(err)
			}
		}
		redisCPU(b, s)
	}
	return cpu / float64(n)
}

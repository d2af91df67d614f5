package headgate

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The workflow store's benchmarks: Append of 3 events and ExpiredTimers must cost the
// same with 1k and with 1M workflows in the namespace (within 1.2x), since every script
// touches its own workflow's keys and O(log N) of the shared sorted sets. Each size is
// built once per run, on a private redis-server, by pipelined raw writes of what the
// scripts would have written: a row, a one-event history and an armed timer per
// workflow, and the id, status and query indexes with all of them in.
//
//	go test -run '^$' -bench 'WorkflowStore' -benchtime 2000x .

const wfBenchEpoch = int64(1_700_000_000_000)

func workflowFixture(b *testing.B, n int) *Store {
	b.Helper()
	srv := redistest.Start(b)
	s, err := NewStore(srv.Client(b), &StoreConfig{Namespace: "wfbench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	k := s.keys
	hist := strconv.FormatInt(wfBenchEpoch, 10) + `\n{"kind":"workflow_started","type":"bench","run":"r","pkg":"p"}`
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		pipe := s.rdb.Pipeline()
		ids := make([]redis.Z, 0, batch)
		query := make([]redis.Z, 0, batch)
		timers := make([]redis.Z, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			id := fmt.Sprintf("f-%08d", i)
			fire := wfBenchEpoch + int64(i) // the first 100 are due at epoch+99
			pipe.HSet(ctx, k.Workflow(id), "head", 1, "status", "running", "type", "bench", "run", "r", "parent", "",
				"prun", "", "pkg", "p", "started", wfBenchEpoch, "closed", "", "updated", wfBenchEpoch)
			pipe.HSet(ctx, k.WorkflowHistory(id), "1", hist)
			pipe.HSet(ctx, k.WorkflowTimers(id), "t", fmt.Sprint(fire, " 1"))
			ids = append(ids, redis.Z{Member: id})
			query = append(query, redis.Z{Member: padMs(wfBenchEpoch) + memberSep + id})
			timers = append(timers, redis.Z{Score: float64(fire), Member: id + memberSep + "t"})
		}
		pipe.ZAdd(ctx, k.WorkflowIDs(), ids...)
		pipe.ZAdd(ctx, k.WorkflowsInStatus("running"), ids...)
		for _, sel := range []string{"all", "type:bench", "status:running", "ts:running:bench"} {
			pipe.ZAdd(ctx, k.WorkflowQuery(sel), query...)
		}
		pipe.ZAdd(ctx, k.Timers(), timers...)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if c := s.rdb.ZCard(ctx, k.Timers()).Val(); c != int64(n) {
		b.Fatalf("fixture has %d timers, want %d", c, n)
	}
	// Warm up: load the scripts and let the server finish growing its tables (Redis
	// rehashes a grown dict a step per command), so the first case measured pays for
	// neither.
	warm := make([]string, 5000)
	for i := range warm {
		warm[i] = fmt.Sprintf("warm-%08d", i)
		if err := s.Append(ctx, warm[i], threeEvents(), 0); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ExpiredTimers(ctx, time.UnixMilli(wfBenchEpoch+99), 100); err != nil {
			b.Fatal(err)
		}
	}
	dropAppended(b, s, warm)
	return s
}

var usecStat = regexp.MustCompile(`cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)`)

// serverUsec returns the server's time in commands since the last call (its
// commandstats, reset after reading).
func serverUsec(b *testing.B, s *Store) float64 {
	usec, _ := serverStats(b, s)
	return usec
}

// serverStats returns the server's time in commands and the number of commands run
// (scripts' own commands counted, the FCALL or EVALSHA around them not) since the last call.
func serverStats(b *testing.B, s *Store) (usec, calls float64) {
	b.Helper()
	ctx := context.Background()
	info, err := s.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range usecStat.FindAllStringSubmatch(info, -1) {
		if m[1] == "fcall" || m[1] == "evalsha" || m[1] == "eval" || m[1] == "function|load" { // inner commands are counted on their own
			continue
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		v, _ := strconv.ParseFloat(m[3], 64)
		usec += v
		calls += n
	}
	if err := s.rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return usec, calls
}

func threeEvents() []Event {
	at := time.UnixMilli(wfBenchEpoch)
	return []Event{
		{Seq: 1, RecordedAt: at, Kind: EventWorkflowStarted, WorkflowType: "bench", RunID: "r", PackageVersion: "p", Input: []byte(`{"n":1}`)},
		{Seq: 2, Kind: EventStepCompleted, Name: "a", Attempt: 1, Result: []byte(`{"ok":true}`)},
		{Seq: 3, Kind: EventStepCompleted, Name: "b", Attempt: 1, Result: []byte(`{"ok":true}`)},
	}
}

// dropAppended removes the benchmark's own workflows, outside the timer, so the
// namespace stays at its fixture's size.
func dropAppended(b *testing.B, s *Store, ids []string) {
	b.Helper()
	ctx := context.Background()
	pipe := s.rdb.Pipeline()
	for _, id := range ids {
		pipe.Del(ctx, s.keys.Workflow(id), s.keys.WorkflowHistory(id), s.keys.WorkflowRuns(id))
		pipe.ZRem(ctx, s.keys.WorkflowIDs(), id)
		pipe.ZRem(ctx, s.keys.WorkflowsInStatus("running"), id)
		for _, sel := range []string{"all", "type:bench", "status:running", "ts:running:bench"} {
			pipe.ZRem(ctx, s.keys.WorkflowQuery(sel), padMs(wfBenchEpoch)+memberSep+id)
		}
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorkflowStore compares, with 1k and with 1M workflows in the namespace,
// Append of 3 events to a new workflow (its start and two steps) and ExpiredTimers of the
// 100 due timers, and reports Append throughput from 1 and from 8 concurrent writers.
//
// The two sizes run on two servers at once and the benchmark alternates between them
// call by call, so a busy machine slows both alike; it reports each size's median call
// and the ratio of the medians (1M over 1k), and each server's command time per call.
func BenchmarkWorkflowStore(b *testing.B) {
	small, large := workflowFixture(b, 1_000), workflowFixture(b, 1_000_000)
	ctx := context.Background()
	b.Run("Append", func(b *testing.B) {
		round := appendRound.Add(1)
		events := threeEvents()
		ids := make([]string, b.N)
		for i := range ids {
			ids[i] = fmt.Sprintf("a-%d-%08d", round, i)
		}
		compareSizes(b, small, large, "append", func(s *Store, i int) error { return s.Append(ctx, ids[i], events, 0) })
		dropAppended(b, small, ids)
		dropAppended(b, large, ids)
	})
	b.Run("ExpiredTimers", func(b *testing.B) {
		asOf := time.UnixMilli(wfBenchEpoch + 99)
		compareSizes(b, small, large, "call", func(s *Store, _ int) error {
			due, err := s.ExpiredTimers(ctx, asOf, 100)
			if err == nil && len(due) != 100 {
				err = fmt.Errorf("%d timers due, want 100", len(due))
			}
			return err
		})
	})
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprint("AppendThroughput/writers=", writers), func(b *testing.B) { benchAppend(b, small, writers) })
	}
}

// compareSizes runs op b.N times on each store, alternating, and reports the median call
// on each, their ratio, and each server's command time per call.
func compareSizes(b *testing.B, small, large *Store, unit string, op func(s *Store, i int) error) {
	durations := [2][]time.Duration{make([]time.Duration, b.N), make([]time.Duration, b.N)}
	stores := [2]*Store{small, large}
	for _, s := range stores {
		serverUsec(b, s)
	}
	b.ResetTimer()
	for i := range b.N {
		for side, s := range stores {
			if i%2 == 1 {
				side, s = 1-side, stores[1-side] // alternate which size goes first
			}
			start := time.Now()
			if err := op(s, i); err != nil {
				b.Fatal(err)
			}
			durations[side][i] = time.Since(start)
		}
	}
	b.StopTimer()
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	m1k, m1m := median(durations[0]), median(durations[1])
	b.ReportMetric(m1k, "p50-ns/"+unit+"@1k")
	b.ReportMetric(m1m, "p50-ns/"+unit+"@1M")
	b.ReportMetric(m1m/m1k, "p50-ratio-1M/1k")
	usec1k, calls1k := serverStats(b, small)
	usec1m, calls1m := serverStats(b, large)
	b.ReportMetric(usec1k/float64(b.N), "redis-µs/"+unit+"@1k")
	b.ReportMetric(usec1m/float64(b.N), "redis-µs/"+unit+"@1M")
	// The same commands per call at both sizes: the work is bounded, whatever the
	// machine's load does to the timings.
	b.ReportMetric(calls1k/float64(b.N), "redis-cmds/"+unit+"@1k")
	b.ReportMetric(calls1m/float64(b.N), "redis-cmds/"+unit+"@1M")
}

var appendRound atomic.Int64

func benchAppend(b *testing.B, s *Store, writers int) {
	ctx := context.Background()
	events := threeEvents()
	round := appendRound.Add(1)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("a-%d-%08d", round, i)
	}
	serverUsec(b, s)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				if err := s.Append(ctx, ids[i], events, 0); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	usec := serverUsec(b, s)
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(usec/float64(b.N), "redis-µs/append")
	dropAppended(b, s, ids)
}

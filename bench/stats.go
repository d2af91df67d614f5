package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// -stats: what each job cost Redis, per phase of a Go system's run.
//
// A run of a Go system has up to two phases: "enqueue" (from opening the
// queue until the worker starts, or the whole run when none does) and
// "worker" (from worker start until its Stop returned). For each the harness
// diffs INFO cpu and INFO commandstats of the server taken at the phase's
// edges and divides by the jobs of the phase: jobs enqueued for "enqueue",
// jobs handled for "worker". Commands run by Lua scripts are counted by
// commandstats on their own line as well, and their time is also inside the
// script's (fcall, or evalsha) time, so the per-command times do not add up; INFO cpu
// (user+sys of the whole server, network I/O included) is the total. The
// commandstats times are elapsed time inside the server, which a busy
// machine inflates (the server gets preempted mid-command); INFO cpu is not.
//
// A system whose Queue implements roundTripCounter also reports the round
// trips its clients made, by script; headgate does (headgate.go).

// statsEnabled is set by -stats.
var statsEnabled bool

// roundTripCounter is implemented by Queues that count their clients' round
// trips (a command, a pipeline) by name.
type roundTripCounter interface {
	RoundTrips() map[string]int64
}

// PhaseStats is the cost of one phase of a run, per job.
type PhaseStats struct {
	Phase   string  `json:"phase"`
	Jobs    int64   `json:"jobs"` // enqueued (enqueue) or handled (worker)
	Seconds float64 `json:"seconds"`
	// RedisCPU is the server's user+sys CPU time (INFO cpu), µs per job.
	RedisCPU float64 `json:"redis_cpu_us_per_job"`
	// ClientCPU is the harness process's user+sys CPU time, µs per job: the
	// library's client side plus the harness's own (small) bookkeeping.
	ClientCPU float64 `json:"client_cpu_us_per_job"`
	// ClientAllocBytes and ClientAllocs are what the harness process allocated on
	// its heap, per job (runtime/metrics): unlike its CPU, a figure the machine's
	// load does not move, and the garbage collector's work grows with it.
	ClientAllocBytes float64 `json:"client_alloc_bytes_per_job"`
	ClientAllocs     float64 `json:"client_allocs_per_job"`
	// AOFBytes is how much the append-only file grew, bytes per job
	// (-durable); 0 without AOF or when a rewrite ran during the phase.
	AOFBytes float64 `json:"aof_bytes_per_job,omitempty"`
	// Commands are INFO commandstats deltas per job, by command.
	Commands map[string]CommandCost `json:"commands"`
	// RoundTrips are the client round trips per job, by script or command
	// name; only for systems that count them.
	RoundTrips map[string]float64 `json:"round_trips_per_job,omitempty"`
	Enqueued   int64              `json:"enqueued,omitempty"` // worker phase: jobs enqueued during it
}

type CommandCost struct {
	Calls float64 `json:"calls_per_job"`
	Usec  float64 `json:"us_per_job"`
}

type cmdStat struct{ calls, usec int64 }

type redisSnapshot struct {
	at   time.Time
	self time.Duration // processCPU
	cpu  float64       // seconds, user+sys
	cmds map[string]cmdStat
	// aofSize is the append-only file's size (-durable; 0 without AOF),
	// aofRewrites how many rewrites have shrunk it so far.
	aofSize, aofRewrites int64
	// allocBytes and allocs are this process's heap allocations so far.
	allocBytes, allocs uint64
}

func snapshotRedis(ctx context.Context, rdb *redis.Client) (redisSnapshot, error) {
	info, err := rdb.Info(ctx, "cpu", "commandstats", "persistence").Result()
	if err != nil {
		return redisSnapshot{}, fmt.Errorf("INFO cpu commandstats persistence: %w", err)
	}
	s := redisSnapshot{at: time.Now(), self: processCPU(), cmds: map[string]cmdStat{}}
	s.allocBytes, s.allocs = heapAllocs()
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case k == "aof_current_size":
			s.aofSize, _ = strconv.ParseInt(v, 10, 64)
		case k == "aof_rewrites":
			s.aofRewrites, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			var c cmdStat
			for kv := range strings.SplitSeq(v, ",") {
				name, val, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseInt(val, 10, 64)
				switch name {
				case "calls":
					c.calls = n
				case "usec":
					c.usec = n
				}
			}
			s.cmds[strings.TrimPrefix(k, "cmdstat_")] = c
		}
	}
	return s, nil
}

// heapAllocs is what this process has allocated on its heap so far, bytes and objects.
func heapAllocs() (bytes, objects uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64(), sample[1].Value.Uint64()
}

// runStats records the phases of one run.
type runStats struct {
	rdb      *redis.Client
	q        any          // a roundTripCounter, when the system counts its round trips
	enqueued atomic.Int64 // jobs enqueued so far in the run
	handled  atomic.Int64 // jobs handled so far in the run

	mu       sync.Mutex
	phase    string
	start    redisSnapshot
	trips    map[string]int64
	enqAtBeg int64
	hdlAtBeg int64
	done     []PhaseStats
	err      error
}

func newRunStats(ctx context.Context, addr string, q any) *runStats {
	s := &runStats{rdb: redis.NewClient(&redis.Options{Addr: addr}), q: q}
	s.begin(ctx, "enqueue")
	return s
}

func (s *runStats) trips0() map[string]int64 {
	if rc, ok := s.q.(roundTripCounter); ok {
		return rc.RoundTrips()
	}
	return nil
}

// begin ends the current phase, if any, and starts the next.
func (s *runStats) begin(ctx context.Context, phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(ctx)
	snap, err := snapshotRedis(ctx, s.rdb)
	if err != nil {
		s.err = err
		return
	}
	s.phase, s.start, s.trips = phase, snap, s.trips0()
	s.enqAtBeg, s.hdlAtBeg = s.enqueued.Load(), s.handled.Load()
}

func (s *runStats) endLocked(ctx context.Context) {
	if s.phase == "" {
		return
	}
	phase := s.phase
	s.phase = ""
	end, err := snapshotRedis(ctx, s.rdb)
	if err != nil {
		s.err = err
		return
	}
	enq, hdl := s.enqueued.Load()-s.enqAtBeg, s.handled.Load()-s.hdlAtBeg
	ps := PhaseStats{Phase: phase, Seconds: end.at.Sub(s.start.at).Seconds(), Commands: map[string]CommandCost{}}
	if phase == "worker" {
		ps.Jobs, ps.Enqueued = hdl, enq
	} else {
		ps.Jobs = enq
	}
	if ps.Jobs == 0 {
		return
	}
	n := float64(ps.Jobs)
	ps.RedisCPU = (end.cpu - s.start.cpu) * 1e6 / n
	ps.ClientCPU = float64((end.self - s.start.self).Microseconds()) / n
	ps.ClientAllocBytes = float64(end.allocBytes-s.start.allocBytes) / n
	ps.ClientAllocs = float64(end.allocs-s.start.allocs) / n
	if end.aofSize > 0 && end.aofRewrites == s.start.aofRewrites {
		ps.AOFBytes = float64(end.aofSize-s.start.aofSize) / n
	}
	for name, c := range end.cmds {
		if name == "info" { // the harness's own snapshots
			continue
		}
		b := s.start.cmds[name]
		if c.calls-b.calls <= 0 {
			continue
		}
		ps.Commands[name] = CommandCost{Calls: float64(c.calls-b.calls) / n, Usec: float64(c.usec-b.usec) / n}
	}
	if t := s.trips0(); t != nil {
		ps.RoundTrips = map[string]float64{}
		for name, v := range t {
			if d := v - s.trips[name]; d > 0 {
				ps.RoundTrips[name] = float64(d) / n
			}
		}
	}
	s.done = append(s.done, ps)
}

// end ends the current phase.
func (s *runStats) end(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(ctx)
}

// finish ends the last phase and returns every phase.
func (s *runStats) finish(ctx context.Context) ([]PhaseStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(ctx)
	s.rdb.Close()
	return s.done, s.err
}

// logStats prints a run's phases to stderr.
func logStats(system, scenario string, phases []PhaseStats) {
	for _, p := range phases {
		var b strings.Builder
		fmt.Fprintf(&b, "stats %s %s, %s phase: %s jobs in %.2fs", system, scenario, p.Phase, thousands(p.Jobs), p.Seconds)
		if p.Enqueued > 0 {
			fmt.Fprintf(&b, " (%s enqueued meanwhile)", thousands(p.Enqueued))
		}
		fmt.Fprintf(&b, "\n    CPU µs/job: redis %.2f (INFO cpu, user+sys), harness process %.2f (getrusage)", p.RedisCPU, p.ClientCPU)
		fmt.Fprintf(&b, "\n    harness heap: %.0f bytes/job, %.1f allocations/job", p.ClientAllocBytes, p.ClientAllocs)
		if p.AOFBytes > 0 {
			fmt.Fprintf(&b, "\n    AOF: %.0f bytes/job", p.AOFBytes)
		}
		if len(p.RoundTrips) > 0 {
			total := 0.0
			var parts []string
			for _, name := range slices.SortedFunc(maps.Keys(p.RoundTrips), func(a, b string) int {
				return cmp.Compare(p.RoundTrips[b], p.RoundTrips[a])
			}) {
				total += p.RoundTrips[name]
				parts = append(parts, fmt.Sprintf("%s %.4g", name, p.RoundTrips[name]))
			}
			fmt.Fprintf(&b, "\n    client round trips: %.4g/job (%s)", total, strings.Join(parts, ", "))
		}
		fmt.Fprintf(&b, "\n    %-16s %10s %10s %10s", "command", "calls/job", "µs/job", "µs/call")
		names := slices.SortedFunc(maps.Keys(p.Commands), func(a, b string) int {
			return cmp.Or(cmp.Compare(p.Commands[b].Usec, p.Commands[a].Usec), cmp.Compare(a, b))
		})
		for _, name := range names {
			c := p.Commands[name]
			perCall := 0.0
			if c.Calls > 0 {
				perCall = c.Usec / c.Calls
			}
			fmt.Fprintf(&b, "\n    %-16s %10.4g %10.4g %10.4g", name, c.Calls, c.Usec, perCall)
		}
		logf("%s", b.String())
	}
}

// tripCounter is a go-redis hook that counts round trips by name: scripts by
// what they are (see scriptName), other commands by their name, pipelines
// as "pipeline".
type tripCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func newTripCounter() *tripCounter { return &tripCounter{n: map[string]int64{}} }

func (t *tripCounter) add(name string) {
	t.mu.Lock()
	t.n[name]++
	t.mu.Unlock()
}

func (t *tripCounter) snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.n)
}

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		name := cmd.Name()
		switch {
		case err != nil && (strings.HasPrefix(err.Error(), "NOSCRIPT") || strings.Contains(err.Error(), "Function not found")):
			// The script's first run on this server; the store sends EVAL, or loads
			// the function and calls it again, next.
			name = "noscript"
		case name == "fcall" || name == "evalsha" || name == "eval":
			name = scriptName(cmd)
		}
		t.add(name)
		return err
	}
}

func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.add("pipeline")
		return next(ctx, cmds)
	}
}

// scriptName tells headgate's scripts apart by the shape of their arguments
// (see the ARGV of each lua/*.lua): the scripts are loaded inside the store,
// so their digests are not known here. A shape not recognised is reported by
// its digest.
func scriptName(cmd redis.Cmder) string {
	a := cmd.Args()
	if len(a) < 4 {
		return cmd.Name()
	}
	argv := a[4:]
	num := func(i int) (int64, bool) {
		if i >= len(argv) {
			return 0, false
		}
		switch v := argv[i].(type) {
		case int:
			return int64(v), true
		case int64:
			return v, true
		case int32:
			return int64(v), true
		}
		return 0, false
	}
	_, firstIsString := argv[0].(string)
	n0, ok0 := num(0)
	n1, ok1 := num(1)
	n2, ok2 := num(2)
	switch {
	case ok0 && ok1 && n1 == 20 && int64(len(argv)) == 2+20*n0:
		return "enqueue"
	case firstIsString && len(argv) >= 7:
		if nq, ok := num(6); ok && int64(len(argv)) == 7+nq {
			return "admit"
		}
	case ok0 && ok1 && ok2 && int64(len(argv)) == 3+10*n2:
		return "ack"
	case ok0 && ok1 && int64(len(argv)) == 2+3*n1:
		return "renew"
	case firstIsString && len(argv) == 3:
		return "claim_duty"
	case firstIsString && len(argv) == 2:
		return "release_duty"
	case ok0 && len(argv) == 4:
		return "reclaim"
	case ok0 && len(argv) == 1:
		// promote and evict both take a limit; promote also answers when the
		// next job is due.
		if r, ok := cmd.(*redis.Cmd); ok {
			if v, ok := r.Val().([]any); ok {
				if len(v) == 3 {
					return "promote"
				}
				return "evict"
			}
		}
		return "promote|evict"
	}
	if sha, ok := a[1].(string); ok && len(sha) >= 8 {
		return "script:" + sha[:8]
	}
	return cmd.Name()
}

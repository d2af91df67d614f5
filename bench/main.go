// Command bench runs headgate and its peers side by side on one redis-server
// and prints a markdown table (or JSON with -json).
//
//	cd bench && go run .                      # full run, private redis-server
//	go run . -quick                           # reduced counts, under two minutes
//	go run . -systems asynq,bullmq -json      # pick systems, machine-readable
//	go run . -systems headgate -stats         # + Redis cost per job, per phase (stats.go)
//
// Every scenario runs for every system, one after the other, on the same
// server, with FLUSHALL before each run so no run sees another's leftovers.
// Progress goes to stderr; the table or JSON is the only thing on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		quick     = flag.Bool("quick", false, "reduced counts (idle samples, backlogs up to 100k); finishes in under two minutes")
		asJSON    = flag.Bool("json", false, "print results as JSON instead of a markdown table")
		systems   = flag.String("systems", "", "comma-separated systems to run (default: all registered: "+strings.Join(registeredNames(), ",")+")")
		only      = flag.String("scenarios", "", "comma-separated scenario names to run (default: all), e.g. e2e,admission@1k")
		redisAddr = flag.String("redis", "", "use the redis-server at host:port instead of starting a private one (needs -flush)")
		flush     = flag.Bool("flush", false, "allow FLUSHALL on the server given by -redis; every run wipes it")
		redisBin  = flag.String("redis-server", "redis-server", "redis-server binary for the private server")
		bullmqDir = flag.String("bullmq-dir", "", "directory holding bench.mjs (default: ./bullmq next to this source)")
		rounds    = flag.Int("rounds", 1, "run the scenarios this many times, the systems in reverse order every other round; the table gives each metric's median, and ratios to the first system are printed round by round")
	)
	var durable durability
	flag.Var(&durable, "durable", "private redis-server with an append-only file: -durable (appendfsync always) or -durable=everysec")
	flag.StringVar(&pgBinDir, "pg-bin", "", "directory with PostgreSQL's initdb and postgres for River (default: newest /usr/lib/postgresql/*/bin, else PATH)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the harness process (the Go systems' client side) to this file")
	memProfile := flag.String("memprofile", "", "write a profile of the harness process's heap allocations (go tool pprof -sample_index=alloc_space) to this file at the end")
	flag.BoolVar(&statsEnabled, "stats", false, "after each run of a Go system, print what each job cost Redis (INFO cpu, commandstats, round trips) to stderr")
	flag.Parse()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
			}
			if err != nil {
				logf("-memprofile: %v", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if b, ok := registry["bullmq"].(*bullmqSystem); ok {
		b.dir = *bullmqDir
	}
	selected, skipped, err := selectSystems(*systems)
	if err != nil {
		return err
	}
	list := scenarios(*quick)
	if *only != "" {
		if list, err = selectScenarios(list, *only); err != nil {
			return err
		}
	}

	addr := *redisAddr
	if addr != "" && durable != "" {
		return fmt.Errorf("-durable configures the private redis-server; with -redis, set appendonly/appendfsync on %s yourself (the footer reports them)", addr)
	}
	if addr == "" {
		srv, err := startRedis(ctx, *redisBin, durable)
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr
	} else if !*flush {
		// The harness wipes the server between runs; doing that to a server
		// we did not start must be asked for.
		return fmt.Errorf("refusing to FLUSHALL %s: the harness wipes the server before every run; pass -flush if that is fine, or drop -redis to use a private server", addr)
	}
	// FLUSHALL of a 1M-job backlog takes seconds, more on a loaded machine:
	// the default 3 s read timeout once ended a full run there.
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 2 * time.Minute})
	defer rdb.Close()
	env, err := describe(ctx, rdb, addr, *quick)
	if err != nil {
		return err
	}
	logf("redis %s at %s (%s), %d CPUs, %s, headgate %s, quick=%v", env.RedisVersion, addr, env.RedisPersistence, env.CPUs, env.GoVersion, env.HeadgateSource, *quick)
	// Stores of their own (River's PostgreSQL), started once for the run.
	var setUp []System
	for _, sys := range selected {
		ss, ok := sys.(setupSystem)
		if !ok {
			setUp = append(setUp, sys)
			continue
		}
		line, stopStore, err := ss.Setup(ctx)
		if err != nil {
			skipped[sys.Name()] = err.Error()
			continue
		}
		defer stopStore()
		if line != "" {
			env.Stores = append(env.Stores, sys.Name()+": "+line)
			logf("%s: %s", sys.Name(), line)
		}
		setUp = append(setUp, sys)
	}
	if len(setUp) == 0 {
		return fmt.Errorf("no system to run (skipped: %v)", skipped)
	}
	selected = setUp
	if l, err := strconv.ParseFloat(env.LoadStart, 64); err == nil && l > float64(env.CPUs) {
		logf("warning: load average %s exceeds %d CPUs; expect noisy numbers", env.LoadStart, env.CPUs)
	}
	for _, name := range slices.Sorted(maps.Keys(skipped)) {
		// Above the table, so whoever reads only stdout sees why a column is
		// missing; with -json the reason is in the document instead.
		if *asJSON {
			logf("%s: skipped (%s)", name, skipped[name])
		} else {
			fmt.Printf("%s: skipped (%s)\n", name, skipped[name])
		}
	}

	rep := &report{Env: env, Systems: names(selected), Skipped: skipped}
	began := time.Now()
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: need at least 1", *rounds)
	}
	for round := range *rounds {
		for _, sc := range list {
			sc.Params.Redis = addr
			for _, sys := range roundOrder(selected, round) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if !runsKind(sys, sc.Kind) {
					continue
				}
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					return fmt.Errorf("FLUSHALL before %s/%s: %w", sys.Name(), sc.Name, err)
				}
				t0 := time.Now()
				res, err := sys.Run(ctx, sc)
				run := runResult{Scenario: sc.Name, Kind: sc.Kind, System: sys.Name(), Round: round, Result: res, Seconds: time.Since(t0).Seconds()}
				if err != nil {
					run.Error = err.Error()
					logf("%-8s %-16s FAILED after %.1fs: %v", sys.Name(), sc.Name, run.Seconds, err)
				} else {
					logf("%-8s %-16s %s (%.1fs)", sys.Name(), sc.Name, summary(sc, res), run.Seconds)
				}
				logStats(sys.Name(), sc.Name, res.Stats)
				rep.Runs = append(rep.Runs, run)
			}
		}
	}
	// Leave the server empty, as a -redis server would want it.
	_ = rdb.FlushAll(ctx).Err()
	rep.Seconds = time.Since(began).Seconds()
	rep.Env.LoadEnd = loadAvg()
	rep.build(list, *quick)
	logf("done in %.1fs", rep.Seconds)
	if *asJSON {
		return rep.writeJSON(os.Stdout)
	}
	rep.writeTable(os.Stdout)
	rep.writePairedRatios(os.Stdout, list, *rounds)
	return nil
}

// selectSystems resolves -systems. Unknown names are an error; known but
// unavailable ones (BullMQ without node) are skipped with their reason.
func selectSystems(flagValue string) (run []System, skipped map[string]string, err error) {
	want := registeredNames()
	if flagValue != "" {
		want = nil
		for n := range strings.SplitSeq(flagValue, ",") {
			n = strings.TrimSpace(strings.ToLower(n))
			if n == "" {
				continue
			}
			if _, ok := registry[n]; !ok {
				return nil, nil, fmt.Errorf("unknown system %q (registered: %s)", n, strings.Join(registeredNames(), ", "))
			}
			if !slices.Contains(want, n) {
				want = append(want, n)
			}
		}
		// Column order stays fixed whatever order the flag used.
		order := registeredNames()
		slices.SortFunc(want, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	}
	skipped = map[string]string{}
	for _, n := range want {
		s := registry[n]
		if err := s.Available(); err != nil {
			skipped[n] = err.Error()
			continue
		}
		run = append(run, s)
	}
	if len(run) == 0 {
		return nil, nil, fmt.Errorf("no system to run (skipped: %v)", skipped)
	}
	return run, skipped, nil
}

func selectScenarios(all []Scenario, flagValue string) ([]Scenario, error) {
	var out []Scenario
	for n := range strings.SplitSeq(flagValue, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == n })
		if i < 0 {
			var known []string
			for _, s := range all {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func describe(ctx context.Context, rdb *redis.Client, addr string, quick bool) (Env, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return Env{}, fmt.Errorf("INFO server on %s: %w", addr, err)
	}
	version := "?"
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			version = v
		}
	}
	persistence, err := redisPersistence(ctx, rdb)
	if err != nil {
		return Env{}, err
	}
	return Env{
		RedisVersion:     version,
		RedisPersistence: persistence,
		RedisAddr:        addr,
		GoVersion:        runtime.Version(),
		CPUs:             runtime.NumCPU(),
		Quick:            quick,
		Started:          time.Now().UTC().Format(time.RFC3339),
		LoadStart:        loadAvg(),
		// Untracked files (new ones not yet added) are not in the digest.
		HeadgateSource: headgateSource(),
	}, nil
}

// redisPersistence reads what the server under test does with writes, from
// the server itself, so that the footer is true for -redis servers too.
func redisPersistence(ctx context.Context, rdb *redis.Client) (string, error) {
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		return "", fmt.Errorf("CONFIG GET: %w", err)
	}
	aof := "no AOF"
	if cfg["appendonly"] == "yes" {
		aof = "AOF appendfsync " + cfg["appendfsync"]
	}
	rdb2 := "no RDB snapshots"
	if s := strings.TrimSpace(cfg["save"]); s != "" {
		rdb2 = "RDB save " + s
	}
	return aof + ", " + rdb2, nil
}

func names(ss []System) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name()
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

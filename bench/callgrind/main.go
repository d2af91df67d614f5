// Command callgrind counts the instructions redis-server executes per job in each phase
// of a job's life through headgate: enqueue (single rqueue.Client.Enqueue calls from
// -producers goroutines, then EnqueueMany batches), admit and ack. It starts a redis-server under
// `valgrind --tool=callgrind` on a free loopback port, zeroes the counters before each
// phase, dumps them after it, and prints the phase's instructions (Ir) per job. With
// -workflows it counts the bench workflow's life instead (workflow.go: three no-op steps
// and a 0 ms sleep): starts, then the drain (admission, history reads, commits, timers).
// With -bulk it counts the bulk verbs by filter (bulk.go): cancel, retry, delete. With -e2e
// it counts the bench's e2e scenario (e2e.go): a preload in batches of 1,000, then a
// worker of concurrency 50 draining it, and the sum of both per job.
// Instruction counts, unlike times, do not depend on the machine's load.
//
//	cd bench && go run ./callgrind -n 2000
//	cd bench && go run ./callgrind -n 2000 -traced   # each job with its producer's trace context tag
//	cd bench && go run ./callgrind -n 10000 -bulk    # bulk cancel, retry, delete by filter
//	cd bench && go run ./callgrind -n 20000 -e2e     # the bench's e2e scenario: preload, worker drain
//	cd bench && go run ./callgrind -n 1000 -zset     # a job index entry's floor: a script's ZADD and ZREM
//	cd bench && go run ./callgrind -n 2000 -scripts eval   # EVALSHA, not Redis Functions
//	cd bench && go run -tags headgate_noindex ./callgrind -n 2000   # without the job indexes
//
// Built with -tags headgate_noindex, the store keeps no job indexes (the root package's
// libsource_noindex.go makes index_move and index_move_all return at once; never a build
// to run a store with): the difference from a default run is what the indexes cost.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/rqueue"
)

type payloadArgs struct {
	Data []byte `msgpack:"d"`
}

func (payloadArgs) Kind() string { return "cg" }

func main() {
	n := flag.Int("n", 2000, "jobs per phase")
	batch := flag.Int("batch", 100, "jobs per EnqueueMany call, admit capacity and acks per AckMany call")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	producers := flag.Int("producers", 1, "goroutines that share the single enqueues")
	keep := flag.Bool("keep", false, "keep the callgrind output files, one per phase (their directory is printed; README: reading a kept dump)")
	traced := flag.Bool("traced", false, "trace every enqueue with contrib/otel, so each job carries its producer's trace context")
	workflows := flag.Bool("workflows", false, "count the bench workflow's start and drain instead of jobs' phases")
	bulk := flag.Bool("bulk", false, "count bulk cancel, retry and delete by filter of n jobs instead of jobs' phases")
	e2e := flag.Bool("e2e", false, "count the bench's e2e scenario on n jobs (preload, worker drain) instead of jobs' phases")
	zset := flag.Bool("zset", false, "count what a script's ZADD and ZREM of n members cost a sorted set of 20,000 (a job index entry's floor), SADD and SREM beside them")
	commands := flag.Bool("commands", false, "print each phase's script calls (and jobs per call) and commands per job by command (INFO commandstats), besides their sum")
	scripts := flag.String("scripts", string(headgate.ScriptsDefault), "how the store runs its scripts: auto (Redis Functions) or eval")
	flag.Parse()
	if err := run(*n, *batch, *producers, *server, *keep, *traced, *workflows, *bulk, *e2e, *zset, headgate.ScriptMode(*scripts), *commands); err != nil {
		fmt.Fprintln(os.Stderr, "callgrind:", err)
		os.Exit(1)
	}
}

func run(n, batch, producers int, server string, keep, traced, workflows, bulk, e2e, zset bool, scripts headgate.ScriptMode, commands bool) error {
	dir, err := os.MkdirTemp("", "headgate-callgrind-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("callgrind output:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// --hz 1: the server's cron runs once a second, not ten times, so an idle server
	// adds little to a phase's count. --compress-strings=no: each dump names its
	// functions itself, so that a kept phase's file reads on its own.
	cmd := exec.Command("valgrind", "--tool=callgrind", "--compress-strings=no", "--callgrind-out-file="+filepath.Join(dir, "cg.out"),
		server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--hz", "1")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start valgrind: %w", err)
	}
	pid := cmd.Process.Pid
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port),
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	calls := &scriptCalls{}
	rdb.AddHook(calls)
	deadline := time.Now().Add(2 * time.Minute)
	for rdb.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			return errors.New("redis-server under valgrind did not answer within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond) // polling a starting process, not a test
	}
	cfg := &rqueue.Config{Namespace: "cg", Scripts: scripts}
	if traced {
		// Spans are sampled and dropped: what is counted is what the trace context tag
		// costs Redis (one distinct tag per single enqueue, one per batch).
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		cfg.EnqueueMiddleware = []rqueue.EnqueueMiddleware{headgateotel.EnqueueMiddleware(&headgateotel.Config{TracerProvider: tp})}
	}
	client, err := rqueue.NewClient(rdb, cfg)
	if err != nil {
		return err
	}
	store := client.Store()
	args := payloadArgs{Data: make([]byte, 100)}
	// Warm-up: scripts loaded and keys created outside the counted phases.
	if _, err := client.Enqueue(ctx, args, nil); err != nil {
		return err
	}
	// Which command the store sends, as Redis counted it.
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return err
	}
	for line := range strings.Lines(info) {
		if strings.HasPrefix(line, "cmdstat_fcall:") || strings.HasPrefix(line, "cmdstat_eval") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			fmt.Printf("scripts (-scripts %s): %s\n", scripts, strings.ToUpper(name))
		}
	}
	fmt.Println("job indexes:", indexes)

	phase := 0
	var phasesIr int64 // the instructions of every phase so far
	measure := func(name string, jobs int, f func() error) error {
		before, err := commandCalls(ctx, rdb)
		if err != nil {
			return err
		}
		callsBefore := calls.snapshot()
		if err := exec.Command("callgrind_control", "-z", strconv.Itoa(pid)).Run(); err != nil {
			return fmt.Errorf("callgrind_control -z: %w", err)
		}
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := exec.Command("callgrind_control", "-d", strconv.Itoa(pid)).Run(); err != nil {
			return fmt.Errorf("callgrind_control -d: %w", err)
		}
		after, err := commandCalls(ctx, rdb)
		if err != nil {
			return err
		}
		phase++
		ir, err := totalIr(filepath.Join(dir, fmt.Sprintf("cg.out.%d", phase)))
		if err != nil {
			return err
		}
		var cmds int64
		names := make([]string, 0, len(after))
		for c, n := range after {
			cmds += n - before[c]
			if n > before[c] {
				names = append(names, c)
			}
		}
		phasesIr += ir
		fmt.Printf("%-32s %8d jobs %14d Ir %10.0f Ir/job %6.2f cmds/job\n", name, jobs, ir, float64(ir)/float64(jobs),
			float64(cmds)/float64(jobs))
		if commands {
			calls.printSince(callsBefore, jobs)
			sort.Slice(names, func(a, b int) bool { return after[names[a]]-before[names[a]] > after[names[b]]-before[names[b]] })
			for _, c := range names {
				fmt.Printf("    %-20s %8.2f per job\n", c, float64(after[c]-before[c])/float64(jobs))
			}
		}
		return nil
	}

	if workflows {
		return measureWorkflows(ctx, rdb, n, measure)
	}
	if zset {
		return measureZset(ctx, rdb, n, measure)
	}
	if bulk {
		return measureBulk(ctx, rdb, n, scripts, measure)
	}
	if e2e {
		if err := measureE2E(ctx, rdb, n, scripts, measure); err != nil {
			return err
		}
		fmt.Printf("%-32s %8d jobs %14d Ir %10.0f Ir/job\n", "e2e (preload + drain)", n, phasesIr, float64(phasesIr)/float64(n))
		return nil
	}
	if err := measure(fmt.Sprintf("enqueue (single, %d producers)", producers), n, func() error {
		var next atomic.Int64
		errs := make([]error, producers)
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if _, err := client.Enqueue(ctx, args, nil); err != nil {
						errs[p] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}); err != nil {
		return err
	}
	if err := measure(fmt.Sprintf("enqueue (batch of %d)", batch), n, func() error {
		params := make([]rqueue.EnqueueParams, batch)
		for i := range params {
			params[i] = rqueue.EnqueueParams{Args: args}
		}
		for done := 0; done < n; done += batch {
			if _, err := client.EnqueueMany(ctx, params); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	var claims []headgate.Claim
	if err := measure(fmt.Sprintf("admit (capacity %d)", batch), 2*n, func() error {
		for len(claims) < 2*n {
			// A lease id per call: a second call under one is a repeat of the first.
			c, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: fmt.Sprintf("l%d", len(claims)), Queues: []string{rqueue.QueueDefault},
				Capacity: min(batch, 2*n-len(claims)), Lease: time.Hour})
			if err != nil {
				return err
			}
			if len(c) == 0 {
				return fmt.Errorf("admitted %d of %d jobs, then none", len(claims), 2*n)
			}
			claims = append(claims, c...)
		}
		return nil
	}); err != nil {
		return err
	}
	return measure(fmt.Sprintf("ack (batch of %d)", batch), len(claims), func() error {
		for first := 0; first < len(claims); first += batch {
			var acks []headgate.AckRequest
			for _, c := range claims[first:min(first+batch, len(claims))] {
				acks = append(acks, headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess})
			}
			res, err := store.AckMany(ctx, acks)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
			}
		}
		return nil
	})
}

// commandCalls sums the calls of INFO commandstats but the script calls (fcall, evalsha,
// eval) and the harness's own info: the commands the scripts ran, which the phases'
// figures divide per job (each redis.call has a fixed cost).
func commandCalls(ctx context.Context, rdb *redis.Client) (map[string]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	calls := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		switch name {
		case "fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro", "info":
			continue
		}
		text, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("INFO commandstats %s: %w", name, err)
		}
		calls[name] = n
	}
	return calls, nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// totalIr reads the instruction count of a callgrind dump: its "summary:" (or
// "totals:") line.
func totalIr(path string) (int64, error) {
	var f *os.File
	var err error
	// The dump is written by the server process after callgrind_control returns.
	for range 100 {
		if f, err = os.Open(path); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range []string{"summary:", "totals:"} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no summary line", path)
}

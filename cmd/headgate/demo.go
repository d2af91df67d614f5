package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

func init() { demoCommand = runDemo }

// tenantJob is the demo's unit of tenant work. EnqueuedAt is the producer's clock: waits
// are measured inside this one process, so host and Redis clocks need not agree.
type tenantJob struct {
	Tenant     string `msgpack:"tenant"`
	Seq        int    `msgpack:"seq"`
	EnqueuedAt int64  `msgpack:"enqueued_at"` // Unix ns
}

func (tenantJob) Kind() string { return "demo.tenant_job" }

// importJob is the demo's poison pill: an import that kills the worker running it.
type importJob struct {
	File string `msgpack:"file"`
}

func (importJob) Kind() string { return "demo.import" }

const (
	noisyTenant     = "acme"
	importQueue     = "imports"
	poisonPrint     = "import:bad.csv"
	poisonSiblings  = 3
	demoCrashLimit  = 2
	demoRetryBase   = 50 * time.Millisecond
	importerLease   = 200 * time.Millisecond
	importerPollGap = 25 * time.Millisecond
)

var quietTenantNames = []string{"globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell"}

type demoConfig struct {
	redisURL    string
	namespace   string
	workers     int
	concurrency int
	noisy       int
	quiet       int
	tenants     int
	every       time.Duration
	work        time.Duration
	failEvery   int
	progress    time.Duration
	timeout     time.Duration
}

// runDemo runs the demo: a noisy tenant's backlog and a few quiet tenants' trickle on one
// queue, a worker fleet draining it fairly, a poison job quarantined, and a summary.
func runDemo(args []string, stdout, stderr io.Writer) int {
	cfg := demoConfig{}
	fs := flag.NewFlagSet("headgate demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.redisURL, "redis", os.Getenv("REDIS_URL"), "Redis `URL` to run on ($REDIS_URL); empty runs an embedded miniredis")
	fs.StringVar(&cfg.namespace, "namespace", "", "`namespace` to use; defaults to a fresh demo-<id>")
	fs.IntVar(&cfg.workers, "workers", 4, "worker processes to simulate")
	fs.IntVar(&cfg.concurrency, "concurrency", 8, "jobs each worker runs at once")
	fs.IntVar(&cfg.noisy, "noisy", 5000, "jobs the noisy tenant ("+noisyTenant+") enqueues at once")
	fs.IntVar(&cfg.quiet, "quiet", 100, "jobs each quiet tenant trickles in")
	fs.IntVar(&cfg.tenants, "tenants", 4, fmt.Sprintf("quiet tenants (1..%d)", len(quietTenantNames)))
	fs.DurationVar(&cfg.every, "every", 20*time.Millisecond, "how often each quiet tenant enqueues a job")
	fs.DurationVar(&cfg.work, "work", time.Millisecond, "simulated work per job")
	fs.IntVar(&cfg.failEvery, "fail-every", 20, "every Nth job fails its first attempt and is retried (0: none)")
	fs.DurationVar(&cfg.progress, "progress", 500*time.Millisecond, "how often to print progress")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: headgate demo [flags]")
		fmt.Fprintln(stderr, "\nRuns a worker fleet against a noisy tenant's backlog and quiet tenants' trickle on")
		fmt.Fprintln(stderr, "one queue, quarantines a poison job, and prints throughput and per-tenant waits.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "headgate demo: unexpected arguments %q\n", fs.Args())
		return exitUsage
	case cfg.tenants < 1 || cfg.tenants > len(quietTenantNames):
		fmt.Fprintf(stderr, "headgate demo: -tenants %d is outside 1..%d\n", cfg.tenants, len(quietTenantNames))
		return exitUsage
	case cfg.workers < 1 || cfg.concurrency < 1 || cfg.noisy < 0 || cfg.quiet < 0 || cfg.failEvery < 0:
		fmt.Fprintln(stderr, "headgate demo: -workers and -concurrency must be positive, job counts not negative")
		return exitUsage
	case cfg.every <= 0 || cfg.progress <= 0 || cfg.timeout <= 0:
		fmt.Fprintln(stderr, "headgate demo: -every, -progress and -timeout must be positive")
		return exitUsage
	}
	cfg.namespace = cmp.Or(cfg.namespace, "demo-"+rqueue.NewID())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := newDemo(cfg, stdout, stderr).run(ctx); err != nil {
		fmt.Fprintf(stderr, "headgate demo: %v\n", err)
		return exitError
	}
	return exitOK
}

// tenant is one tenant's counters.
type tenant struct {
	name  string
	noisy bool
	jobs  int // how many it enqueues

	enqueued atomic.Int64
	done     atomic.Int64

	mu      sync.Mutex
	started map[string]bool // job ids whose first start was measured
	waits   []time.Duration // enqueue to first start
}

type demo struct {
	cfg            demoConfig
	stdout, stderr io.Writer

	tenants []*tenant
	byName  map[string]*tenant
	total   int64

	done     atomic.Int64
	failures atomic.Int64 // first attempts that failed on purpose
	allDone  chan struct{}
	doneOnce sync.Once

	siblingIDs []string // staged siblings of the poison import

	crashes  atomic.Int64 // importer deaths
	refused  atomic.Int64 // enqueues refused by the quarantine
	importer chan struct{}
}

func newDemo(cfg demoConfig, stdout, stderr io.Writer) *demo {
	d := &demo{cfg: cfg, stdout: stdout, stderr: stderr, byName: map[string]*tenant{},
		allDone: make(chan struct{}), importer: make(chan struct{})}
	add := func(name string, noisy bool, jobs int) {
		t := &tenant{name: name, noisy: noisy, jobs: jobs, started: map[string]bool{}}
		d.tenants = append(d.tenants, t)
		d.byName[name] = t
		d.total += int64(jobs)
	}
	add(noisyTenant, true, cfg.noisy)
	for _, name := range quietTenantNames[:cfg.tenants] {
		add(name, false, cfg.quiet)
	}
	return d
}

func (d *demo) run(ctx context.Context) error {
	rdb, where, closeRedis, err := d.connect(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	// The workers refuse a server that would lose jobs or refuse every write; the demo
	// finds out before it enqueues thousands of jobs there that nothing would run.
	if _, err := headgate.CheckServer(ctx, rdb); err != nil {
		var ev *headgate.EvictionPolicyError
		var re *headgate.ReplicaError
		if errors.As(err, &ev) || errors.As(err, &re) {
			return err
		}
	}
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: d.cfg.namespace})
	if err != nil {
		return err
	}
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: d.cfg.namespace})
	if err != nil {
		return err
	}

	fmt.Fprintf(d.stdout, "headgate demo on %s, namespace %s\n", where, d.cfg.namespace)
	fmt.Fprintf(d.stdout, "  %d workers × %d slots; tenant %s enqueues %d jobs at once, %d quiet tenants %d each, one every %s\n",
		d.cfg.workers, d.cfg.concurrency, noisyTenant, d.cfg.noisy, d.cfg.tenants, d.cfg.quiet, d.cfg.every)
	fmt.Fprintf(d.stdout, "  every %s job fails once; a poison import kills its worker until it is quarantined\n\n", ordinal(d.cfg.failEvery))

	// The noisy tenant's backlog goes in first, so the quiet tenants arrive behind it.
	if err := d.enqueueBacklog(ctx, client); err != nil {
		return err
	}
	if err := d.enqueuePoison(ctx, client); err != nil {
		return err
	}
	// The summary's last hour (headgate stats) counts the acks from this sample of the
	// queues' counters on: without it the series would start at the workers' first
	// sample, taken once some jobs were done already, and leave those out.
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: d.cfg.namespace})
	if err != nil {
		return err
	}
	if _, err := store.RecordSeries(ctx, 0); err != nil {
		return err
	}

	workers, err := d.startWorkers(ctx, rdb)
	if err != nil {
		return err
	}
	start := time.Now()
	var finished time.Time

	var wg sync.WaitGroup
	bg, stopBG := context.WithCancel(ctx)
	wg.Add(2)
	go func() { defer wg.Done(); d.trickle(bg, client) }()
	go func() { defer wg.Done(); d.importerLoop(bg, client, insp) }()

	tick := time.NewTicker(d.cfg.progress)
	var runErr error
loop:
	for {
		select {
		case <-d.allDone:
			finished = time.Now()
			// The quarantine story finishes on its own clock; give it a moment.
			select {
			case <-d.importer:
			case <-ctx.Done():
			}
			break loop
		case <-tick.C:
			d.printProgress(time.Since(start))
		case <-ctx.Done():
			runErr = fmt.Errorf("stopped after %s with %d of %d jobs done: %w",
				time.Since(start).Round(time.Millisecond), d.done.Load(), d.total, context.Cause(ctx))
			break loop
		}
	}
	tick.Stop()
	stopBG()
	wg.Wait()
	d.printProgress(time.Since(start))

	stopCtx, cancelStop := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancelStop()
	for _, w := range workers {
		if err := w.Stop(stopCtx); err != nil && runErr == nil {
			runErr = fmt.Errorf("stop worker %s: %w", w.ID(), err)
		}
	}
	if finished.IsZero() {
		finished = time.Now()
	}
	if err := d.summary(ctx, insp, finished.Sub(start)); err != nil && runErr == nil {
		runErr = err
	}
	if strings.HasPrefix(where, "redis") {
		// Not the password: the line goes to a terminal, and maybe a log.
		redacted := redactURL(d.cfg.redisURL)
		note := ""
		if redacted != d.cfg.redisURL {
			note = " (the URL's password in place of xxxxx)"
		}
		fmt.Fprintf(d.stdout, "\ninspect it: headgate -redis %s -namespace %s stats%s\n", shellArg(redacted), d.cfg.namespace, note)
	}
	return runErr
}

// connect returns a client of the -redis server (of its cluster, for a cluster node), or
// of an embedded miniredis.
func (d *demo) connect(ctx context.Context) (redis.UniversalClient, string, func(), error) {
	if d.cfg.redisURL != "" {
		c := &cli{redisURL: d.cfg.redisURL}
		node, err := c.connect()
		if err != nil {
			return nil, "", nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, timeoutDefault)
		rdb := clusterOf(pctx, node)
		cancel()
		closeAll := func() {
			if rdb != node {
				_ = rdb.Close()
			}
			_ = node.Close()
		}
		return rdb, "redis " + redactURL(d.cfg.redisURL), closeAll, nil
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("start embedded miniredis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, "an embedded miniredis (pass -redis URL for a real server)", func() { _ = rdb.Close(); mr.Close() }, nil
}

func (d *demo) enqueueBacklog(ctx context.Context, client *rqueue.Client) error {
	t := d.byName[noisyTenant]
	const batch = 500
	for from := 0; from < t.jobs; from += batch {
		params := make([]rqueue.EnqueueParams, 0, batch)
		for seq := from; seq < min(from+batch, t.jobs); seq++ {
			params = append(params, rqueue.EnqueueParams{
				Args: tenantJob{Tenant: t.name, Seq: seq, EnqueuedAt: time.Now().UnixNano()},
				Opts: &rqueue.EnqueueOpts{Partition: t.name},
			})
		}
		if _, err := client.EnqueueMany(ctx, params); err != nil {
			return fmt.Errorf("enqueue %s's backlog: %w", t.name, err)
		}
		t.enqueued.Add(int64(len(params)))
	}
	return nil
}

// trickle enqueues one job per quiet tenant every cfg.every, until each has its share.
func (d *demo) trickle(ctx context.Context, client *rqueue.Client) {
	tick := time.NewTicker(d.cfg.every)
	defer tick.Stop()
	for seq := 0; seq < d.cfg.quiet; seq++ {
		params := make([]rqueue.EnqueueParams, 0, d.cfg.tenants)
		for _, t := range d.tenants[1:] {
			params = append(params, rqueue.EnqueueParams{
				Args: tenantJob{Tenant: t.name, Seq: seq, EnqueuedAt: time.Now().UnixNano()},
				Opts: &rqueue.EnqueueOpts{Partition: t.name},
			})
		}
		if _, err := client.EnqueueMany(ctx, params); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(d.stderr, "headgate demo: enqueue: %v\n", err)
			}
			return
		}
		for _, t := range d.tenants[1:] {
			t.enqueued.Add(1)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

func (d *demo) startWorkers(ctx context.Context, rdb redis.UniversalClient) ([]*worker.Worker, error) {
	logger := slog.New(slog.NewTextHandler(d.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var workers []*worker.Worker
	for i := range d.cfg.workers {
		w, err := worker.New(rdb, &worker.Config{
			Namespace:       d.cfg.namespace,
			ID:              fmt.Sprintf("demo-worker-%d", i+1),
			Concurrency:     d.cfg.concurrency,
			RetryBase:       demoRetryBase,
			CrashLimit:      demoCrashLimit,
			ReclaimInterval: 50 * time.Millisecond,
			Logger:          logger,
		})
		if err != nil {
			return nil, err
		}
		worker.Handle(w, d.handle)
		if err := w.Start(ctx); err != nil {
			for _, started := range workers {
				_ = started.Stop(context.Background())
			}
			return nil, err
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// handle runs one tenant job: it measures the wait before the job's first start, works,
// and fails every failEvery-th job's first attempt.
func (d *demo) handle(ctx context.Context, job *worker.Job[tenantJob]) error {
	t := d.byName[job.Args.Tenant]
	if t == nil {
		return worker.Skip("unknown tenant " + job.Args.Tenant)
	}
	t.mu.Lock()
	if !t.started[job.ID] {
		t.started[job.ID] = true
		t.waits = append(t.waits, time.Since(time.Unix(0, job.Args.EnqueuedAt)))
	}
	t.mu.Unlock()
	if d.cfg.work > 0 {
		timer := time.NewTimer(d.cfg.work)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return context.Cause(ctx)
		}
	}
	if d.cfg.failEvery > 0 && job.Args.Seq%d.cfg.failEvery == d.cfg.failEvery-1 && job.Attempt == 0 {
		d.failures.Add(1)
		return errors.New("downstream timed out (the demo fails this attempt on purpose)")
	}
	t.done.Add(1)
	if d.done.Add(1) == d.total {
		d.doneOnce.Do(func() { close(d.allDone) })
	}
	return nil
}

// enqueuePoison stages the poison import and its siblings (same fingerprint). Only the
// doomed importer serves their queue.
func (d *demo) enqueuePoison(ctx context.Context, client *rqueue.Client) error {
	params := []rqueue.EnqueueParams{{Args: importJob{File: "bad.csv"},
		Opts: &rqueue.EnqueueOpts{Queue: importQueue, Fingerprint: poisonPrint, Priority: 10}}}
	for i := range poisonSiblings {
		params = append(params, rqueue.EnqueueParams{Args: importJob{File: fmt.Sprintf("bad.csv part %d", i+2)},
			Opts: &rqueue.EnqueueOpts{Queue: importQueue, Fingerprint: poisonPrint, Pending: true}})
	}
	res, err := client.EnqueueMany(ctx, params)
	if err != nil {
		return fmt.Errorf("enqueue the poison import: %w", err)
	}
	d.siblingIDs = nil
	for _, r := range res[1:] {
		d.siblingIDs = append(d.siblingIDs, r.ID)
	}
	return nil
}

// importerLoop plays an import worker that dies on the poison job: it takes the job and
// never acks it, so the lease expires and the fleet's reclaim duty counts a crash. At
// the crash limit the job is quarantined; then the siblings are released and held back
// by admission instead of killing the importer again, and a new enqueue of the
// fingerprint is refused.
func (d *demo) importerLoop(ctx context.Context, client *rqueue.Client, insp *inspector.Inspector) {
	defer close(d.importer)
	store := client.Store()
	tick := time.NewTicker(importerPollGap)
	defer tick.Stop()
	admit := func() int {
		claims, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "importer", LeaseID: rqueue.NewID(),
			Queues: []string{importQueue}, Capacity: 1, Lease: importerLease})
		if err != nil {
			return 0
		}
		return len(claims)
	}
	for {
		if n := admit(); n > 0 {
			d.crashes.Add(int64(n)) // and the importer "dies" holding it
		}
		q, err := insp.Quarantined(ctx)
		if err == nil && len(q) > 0 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
	if _, err := client.Release(ctx, d.siblingIDs...); err != nil {
		return
	}
	admit() // the released siblings are set aside, not admitted
	_, err := client.Enqueue(ctx, importJob{File: "bad.csv again"},
		&rqueue.EnqueueOpts{Queue: importQueue, Fingerprint: poisonPrint})
	var qe *headgate.QuarantinedError
	if errors.As(err, &qe) {
		d.refused.Add(1)
	}
}

func (d *demo) printProgress(elapsed time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s  done %*d/%d", elapsed.Round(10*time.Millisecond), digits(d.total), d.done.Load(), d.total)
	for _, t := range d.tenants {
		fmt.Fprintf(&b, "  %s %d/%d", t.name, t.done.Load(), t.jobs)
	}
	fmt.Fprintf(&b, "  retries %d  crashes %d", d.failures.Load(), d.crashes.Load())
	fmt.Fprintln(d.stdout, b.String())
}

func (d *demo) summary(ctx context.Context, insp *inspector.Inspector, elapsed time.Duration) error {
	w := d.stdout
	done := d.done.Load()
	fmt.Fprintln(w, "\nsummary")
	rate := float64(done) / elapsed.Seconds()
	fmt.Fprintf(w, "  throughput   %d jobs in %s: %.0f jobs/s (%d workers × %d slots, %s of work per job)\n",
		done, elapsed.Round(time.Millisecond), rate, d.cfg.workers, d.cfg.concurrency, d.cfg.work)
	fmt.Fprintf(w, "  retries      %d first attempts failed and were retried after backoff\n", d.failures.Load())

	q, err := insp.Quarantined(ctx)
	if err != nil {
		return err
	}
	if len(q) == 0 {
		fmt.Fprintf(w, "  quarantined  none (the importer crashed %d times)\n", d.crashes.Load())
	}
	for _, f := range q {
		fmt.Fprintf(w, "  quarantined  job %s (fingerprint %s) after %d worker crashes; %d siblings held, %d new enqueue(s) refused\n",
			f.JobID, f.Fingerprint, d.crashes.Load(), f.Held, d.refused.Load())
	}

	fmt.Fprintln(w, "\n  waits from enqueue to first start:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TENANT\tJOBS\tDONE\tWAIT p50\tWAIT p99\tMAX")
	for _, t := range d.tenants {
		t.mu.Lock()
		waits := slices.Clone(t.waits)
		t.mu.Unlock()
		slices.Sort(waits)
		note := ""
		if t.noisy {
			note = "  (noisy: its backlog came first)"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s%s\n", t.name, t.jobs, t.done.Load(),
			fmtDur(percentile(waits, 50)), fmtDur(percentile(waits, 99)), fmtDur(percentile(waits, 100)), note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n  the namespace now (headgate stats):")
	c := &cli{stdout: &indent{w: w, prefix: "  "}, namespace: d.cfg.namespace, insp: insp}
	return cmdStats(ctx, c, nil)
}

// percentile returns the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	return sorted[(len(sorted)-1)*p/100]
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func ordinal(n int) string {
	if n <= 0 {
		return "no"
	}
	if n%100 >= 11 && n%100 <= 13 {
		return fmt.Sprintf("%dth", n)
	}
	switch n % 10 {
	case 1:
		return fmt.Sprintf("%dst", n)
	case 2:
		return fmt.Sprintf("%dnd", n)
	case 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}

func digits(n int64) int { return len(fmt.Sprint(n)) }

// indent prefixes every line written through it.
type indent struct {
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (in *indent) Write(p []byte) (int, error) {
	var b []byte
	for _, c := range p {
		if !in.mid && c != '\n' {
			b = append(b, in.prefix...)
			in.mid = true
		}
		b = append(b, c)
		if c == '\n' {
			in.mid = false
		}
	}
	if _, err := in.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

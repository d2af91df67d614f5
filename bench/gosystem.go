package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// goSystem runs the scenarios for a Go library through its Queue. Every Go
// library gets exactly this code, so differences in the table come from the
// libraries and not from the harness. bullmq/bench.mjs is its Node twin.
type goSystem struct {
	name string
	open Opener
	// avail and setup are for libraries that need more than the harness's
	// Redis (River: PostgreSQL); nil for the others.
	avail func() error
	setup func(ctx context.Context) (env string, stop func(), err error)
	// notRedis: the library keeps its jobs elsewhere, so -stats (which
	// reads the Redis server's INFO) has nothing to say about it.
	notRedis bool
}

func (s *goSystem) Name() string { return s.name }

func (s *goSystem) Available() error {
	if s.avail == nil {
		return nil
	}
	return s.avail()
}

// Setup implements setupSystem.
func (s *goSystem) Setup(ctx context.Context) (string, func(), error) {
	if s.setup == nil {
		return "", func() {}, nil
	}
	return s.setup(ctx)
}

func (s *goSystem) Run(ctx context.Context, sc Scenario) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(sc.Params.TimeoutMS)*time.Millisecond)
	defer cancel()
	if isWorkflowKind(sc.Kind) {
		e, err := workflowEngines[s.name](ctx, sc.Params.Redis)
		if err != nil {
			return Result{}, fmt.Errorf("open %s workflows: %w", s.name, err)
		}
		defer e.Close()
		var st *runStats
		if statsEnabled {
			st = newRunStats(ctx, sc.Params.Redis, e)
		}
		res, err := runWorkflow(ctx, e, sc.Kind, sc.Params, st)
		if st != nil {
			phases, serr := st.finish(context.WithoutCancel(ctx))
			if err == nil && serr != nil {
				logf("%s %s: stats: %v", s.name, sc.Name, serr)
			}
			res.Stats = phases
		}
		return res, err
	}
	q, err := s.open(ctx, sc.Params.Redis)
	if err != nil {
		return Result{}, fmt.Errorf("open %s: %w", s.name, err)
	}
	defer q.Close()
	r := &goRun{q: q, p: sc.Params}
	if statsEnabled && !s.notRedis {
		r.stats = newRunStats(ctx, sc.Params.Redis, q)
	}
	res, err := r.run(ctx, sc.Kind)
	if n, ok := q.(rowNoter); ok && err == nil {
		res.RowNotes = n.RowNotes(sc.Kind)
	}
	if r.stats != nil {
		phases, serr := r.stats.finish(context.WithoutCancel(ctx))
		if err == nil && serr != nil {
			logf("%s %s: stats: %v", s.name, sc.Name, serr)
		}
		res.Stats = phases
	}
	return res, err
}

func (r *goRun) run(ctx context.Context, kind Kind) (Result, error) {
	switch kind {
	case KindEnqueueSingle:
		return r.enqueueSingle(ctx)
	case KindEnqueueBatch:
		return r.enqueueBatch(ctx)
	case KindE2E:
		return r.e2e(ctx)
	case KindIdleLatency:
		return r.idleLatency(ctx)
	case KindAdmission:
		return r.admission(ctx)
	case KindFairness:
		return r.fairness(ctx)
	case KindMemory:
		return r.memory(ctx)
	}
	return Result{}, fmt.Errorf("unknown scenario kind %q", kind)
}

type goRun struct {
	q     Queue
	p     Params
	stats *runStats // -stats only (stats.go)
}

// enqueue is Queue.Enqueue, counted for -stats.
func (r *goRun) enqueue(ctx context.Context, j Job) error {
	err := r.q.Enqueue(ctx, j)
	if err == nil && r.stats != nil {
		r.stats.enqueued.Add(1)
	}
	return err
}

const noBatchNote = "no batch API: single Enqueue calls from %d goroutines"

func (r *goRun) enqueueSingle(ctx context.Context) (Result, error) {
	mk := func(int) Job { return r.job("", 0) }
	if err := r.fill(ctx, r.p.Warmup, r.p.Producers, false, mk); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	t0 := time.Now()
	if err := r.fill(ctx, r.p.Jobs, r.p.Producers, false, mk); err != nil {
		return Result{}, err
	}
	return rate(r.p.Jobs, time.Since(t0), ""), nil
}

func (r *goRun) enqueueBatch(ctx context.Context) (Result, error) {
	note := ""
	if _, ok := r.q.(BatchEnqueuer); !ok {
		note = fmt.Sprintf(noBatchNote, r.p.Producers)
	}
	mk := func(int) Job { return r.job("", 0) }
	if err := r.fill(ctx, r.p.Warmup, r.p.Producers, true, mk); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	t0 := time.Now()
	if err := r.fill(ctx, r.p.Jobs, r.p.Producers, true, mk); err != nil {
		return Result{}, err
	}
	res := rate(r.p.Jobs, time.Since(t0), note)
	if _, ok := r.q.(bulkBatchEnqueuer); !ok {
		return res, nil
	}
	// The same again through the bulk-load path, on top of the jobs above
	// (a queue of 100k more jobs is no harder to append to).
	if err := r.fillBulk(ctx, r.p.Warmup, r.p.Producers, mk); err != nil {
		return Result{}, fmt.Errorf("bulk warm-up: %w", err)
	}
	t0 = time.Now()
	if err := r.fillBulk(ctx, r.p.Jobs, r.p.Producers, mk); err != nil {
		return Result{}, err
	}
	res.Metrics[mJobsPerSecBulk] = float64(r.p.Jobs) / time.Since(t0).Seconds()
	return res, nil
}

func (r *goRun) e2e(ctx context.Context) (Result, error) {
	if err := r.preload(ctx, r.p.Jobs, ""); err != nil {
		return Result{}, err
	}
	done := newCountdown(r.p.Jobs)
	t0 := time.Now()
	w, err := r.startWorker(ctx, func([]byte) { done.tick() })
	if err != nil {
		return Result{}, err
	}
	err = done.wait(ctx, "jobs handled")
	elapsed := time.Since(t0)
	if err := errors.Join(err, w.Stop()); err != nil {
		return Result{}, err
	}
	return rate(r.p.Jobs, elapsed, ""), nil
}

func (r *goRun) idleLatency(ctx context.Context) (Result, error) {
	started := make(chan time.Duration, 1)
	w, err := r.startWorker(ctx, func(p []byte) {
		ts, _ := stampOf(p)
		// Never block a worker goroutine: an unexpected second delivery is
		// dropped rather than wedging Stop.
		select {
		case started <- sinceStamp(ts):
		default:
		}
	})
	if err != nil {
		return Result{}, err
	}
	defer w.Stop()
	if err := sleepCtx(ctx, time.Duration(r.p.SettleMS)*time.Millisecond); err != nil {
		return Result{}, err
	}
	lat := make([]time.Duration, 0, r.p.Jobs)
	for i := 0; i < r.p.Jobs; i++ {
		if err := r.enqueue(ctx, r.job("", 0)); err != nil {
			return Result{}, err
		}
		select {
		case d := <-started:
			lat = append(lat, d)
		case <-ctx.Done():
			return Result{}, fmt.Errorf("idle-latency: job %d of %d never started: %w", i+1, r.p.Jobs, ctx.Err())
		}
	}
	if err := w.Stop(); err != nil {
		return Result{}, err
	}
	return percentiles(lat, ""), nil
}

func (r *goRun) admission(ctx context.Context) (Result, error) {
	// The warm-up and measured jobs sit in front of the backlog, so the queue
	// holds at least Backlog jobs for the whole measurement.
	total := r.p.Warmup + r.p.Windows*r.p.Jobs
	if err := r.preload(ctx, r.p.Backlog+total, ""); err != nil {
		return Result{}, err
	}
	// Clock marks at the end of the warm-up and of every window.
	var thresholds []int
	for k := range r.p.Windows + 1 {
		thresholds = append(thresholds, r.p.Warmup+k*r.p.Jobs)
	}
	m := newMarks(thresholds)
	w, err := r.startWorker(ctx, func([]byte) { m.tick() })
	if err != nil {
		return Result{}, err
	}
	defer w.Stop()
	if err := m.wait(ctx); err != nil {
		return Result{}, err
	}
	if err := w.Stop(); err != nil {
		return Result{}, err
	}
	times := m.times()
	var per []float64
	for k := 1; k < len(times); k++ {
		per = append(per, float64(times[k].Sub(times[k-1]).Nanoseconds())/1e3/float64(r.p.Jobs))
	}
	slices.Sort(per)
	return Result{Metrics: map[string]float64{
		mUsPerJob: per[len(per)/2],
		mUsMin:    per[0],
		mUsMax:    per[len(per)-1],
		mElapsed:  times[len(times)-1].Sub(times[0]).Seconds(),
	}}, nil
}

// marks records when the handled-job count reaches each threshold.
type marks struct {
	thresholds []int64
	seen       atomic.Int64
	mu         sync.Mutex
	at         []time.Time
	done       chan struct{}
}

func newMarks(thresholds []int) *marks {
	m := &marks{at: make([]time.Time, len(thresholds)), done: make(chan struct{})}
	for _, t := range thresholds {
		m.thresholds = append(m.thresholds, int64(t))
	}
	return m
}

func (m *marks) tick() {
	n := m.seen.Add(1)
	for i, t := range m.thresholds {
		if n == t {
			now := time.Now()
			m.mu.Lock()
			m.at[i] = now
			m.mu.Unlock()
			if i == len(m.thresholds)-1 {
				close(m.done)
			}
		}
	}
}

func (m *marks) wait(ctx context.Context) error {
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d jobs handled: %w", m.seen.Load(), m.thresholds[len(m.thresholds)-1], ctx.Err())
	}
}

func (m *marks) times() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.at)
}

// busyAfter is how many noisy jobs the worker must have handled before the
// quiet tenants arrive: they should find a worker already busy with the
// noisy backlog rather than one still starting.
func busyAfter(p Params) int { return min(2*p.Concurrency, p.Jobs) }

func (r *goRun) fairness(ctx context.Context) (Result, error) {
	if err := r.preload(ctx, r.p.Jobs, "noisy"); err != nil {
		return Result{}, err
	}
	busy := newCountdown(busyAfter(r.p))
	quiet := newCountdown(r.p.QuietTenants)
	// started counts handler starts; startedAt[i] is the count just before
	// quiet job i was enqueued, so a quiet job's "ahead" is how many jobs
	// started between its enqueue and its own start.
	var started atomic.Int64
	startedAt := make([]atomic.Int64, r.p.QuietTenants)
	var mu sync.Mutex
	waits := make([]time.Duration, 0, r.p.QuietTenants)
	ahead := make([]float64, 0, r.p.QuietTenants)
	w, err := r.startWorker(ctx, func(p []byte) {
		n := started.Add(1)
		ts, flags := stampOf(p)
		if flags&flagQuiet == 0 {
			busy.tick()
			return
		}
		d := sinceStamp(ts)
		a := n - 1 - startedAt[quietIndex(p)].Load()
		mu.Lock()
		waits = append(waits, d)
		ahead = append(ahead, float64(a))
		mu.Unlock()
		quiet.tick()
	})
	if err != nil {
		return Result{}, err
	}
	defer w.Stop()
	if err := busy.wait(ctx, "noisy jobs handled before the quiet tenants arrive"); err != nil {
		return Result{}, err
	}
	for i := 0; i < r.p.QuietTenants; i++ {
		j := r.job(fmt.Sprintf("quiet-%03d", i), flagQuiet)
		binary.BigEndian.PutUint16(j.Payload[9:], uint16(i))
		startedAt[i].Store(started.Load())
		if err := r.enqueue(ctx, j); err != nil {
			return Result{}, err
		}
	}
	if err := quiet.wait(ctx, "quiet jobs started"); err != nil {
		return Result{}, err
	}
	if err := w.Stop(); err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	res := percentiles(waits, "")
	slices.Sort(ahead)
	res.Metrics[mAheadP99] = ahead[nearestRank(0.99, len(ahead))]
	return res, nil
}

func (r *goRun) memory(ctx context.Context) (Result, error) {
	size, note := r.usedBytes()
	before, err := size(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := r.preload(ctx, r.p.Jobs, ""); err != nil {
		return Result{}, err
	}
	after, err := size(ctx)
	if err != nil {
		return Result{}, err
	}
	return Result{Note: note, Metrics: map[string]float64{
		mBytesPerJob: float64(after-before) / float64(r.p.Jobs),
	}}, nil
}

// usedBytes is what the memory scenario measures: the Redis server's
// used_memory, or for a library that keeps its jobs elsewhere its own count
// of stored bytes.
func (r *goRun) usedBytes() (func(context.Context) (int64, error), string) {
	if sb, ok := r.q.(storedBytesCounter); ok {
		return sb.StoredBytes, sb.StoredBytesNote()
	}
	return func(ctx context.Context) (int64, error) {
		rdb := redis.NewClient(&redis.Options{Addr: r.p.Redis})
		defer rdb.Close()
		return usedMemory(ctx, rdb)
	}, ""
}

// preload fills a backlog by the library's fastest path: batches from the
// producers when it has a batch API, single calls from more goroutines when
// it has not (single calls are round-trip bound, so more of them in flight
// is what makes them fast).
func (r *goRun) preload(ctx context.Context, n int, tenant string) error {
	mk := func(int) Job { return r.job(tenant, 0) }
	if _, ok := r.q.(bulkBatchEnqueuer); ok {
		return r.fillBulk(ctx, n, r.p.Producers, mk)
	}
	workers := r.p.Producers
	if _, ok := r.q.(BatchEnqueuer); !ok {
		workers = preloadWorkers
	}
	return r.fill(ctx, n, workers, true, mk)
}

// fillBulk is fill through the bulk-load path (bulkBatchEnqueuer), in
// batches of BatchSize.
func (r *goRun) fillBulk(ctx context.Context, n, workers int, mk func(i int) Job) error {
	bulk := r.q.(bulkBatchEnqueuer)
	return r.fillWith(ctx, n, workers, r.p.BatchSize, mk, nil, bulk.EnqueueBulk)
}

const preloadWorkers = 32

// fill enqueues n jobs from the given number of goroutines, in batches when
// batch is set and the library has a batch API.
func (r *goRun) fill(ctx context.Context, n, workers int, batch bool, mk func(i int) Job) error {
	be, hasBatch := r.q.(BatchEnqueuer)
	if batch && hasBatch {
		return r.fillWith(ctx, n, workers, r.p.BatchSize, mk, nil, be.EnqueueBatch)
	}
	return r.fillWith(ctx, n, workers, 1, mk, r.enqueue, nil)
}

// fillWith enqueues n jobs from the given number of goroutines, step jobs
// per call: one through single when step is 1, else batches through many.
func (r *goRun) fillWith(ctx context.Context, n, workers, step int, mk func(i int) Job,
	single func(context.Context, Job) error, many func(context.Context, []Job) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(int64(step))) - step
				if start >= n || ctx.Err() != nil {
					return
				}
				end := min(start+step, n)
				var err error
				if step == 1 {
					err = single(ctx, mk(start))
				} else {
					jobs := make([]Job, 0, end-start)
					for i := start; i < end; i++ {
						jobs = append(jobs, mk(i))
					}
					err = many(ctx, jobs)
					if err == nil && r.stats != nil {
						r.stats.enqueued.Add(int64(len(jobs)))
					}
				}
				if err != nil {
					errs[w] = fmt.Errorf("enqueue job %d: %w", start, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// startWorker makes Stop idempotent, so a deferred Stop after an explicit
// one is harmless whatever the library does on a second call.
func (r *goRun) startWorker(ctx context.Context, h Handler) (Worker, error) {
	if st := r.stats; st != nil {
		st.begin(ctx, "worker")
		inner := h
		h = func(p []byte) {
			inner(p)
			st.handled.Add(1)
		}
	}
	w, err := r.q.StartWorker(ctx, r.p.Concurrency, h)
	if err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return &onceWorker{w: w, stats: r.stats}, nil
}

type onceWorker struct {
	w     Worker
	stats *runStats // -stats: the worker phase ends when Stop returns
	once  sync.Once
	err   error
}

func (o *onceWorker) Stop() error {
	o.once.Do(func() {
		o.err = o.w.Stop()
		if o.stats != nil {
			o.stats.end(context.Background())
		}
	})
	return o.err
}

func (r *goRun) job(tenant string, flags byte) Job {
	return Job{Tenant: tenant, Payload: stamp(r.p.PayloadSize, flags)}
}

// Payload layout: 8-byte big-endian timestamp, 1 flag byte, zero padding;
// a quiet job of the fairness scenario has its index in bytes 9-10.
// The timestamp is monotonic time since the harness started, which is all a
// same-process latency needs and is immune to wall-clock steps.

const flagQuiet = 1

var epoch = time.Now()

func stamp(size int, flags byte) []byte {
	b := make([]byte, max(size, 11))
	binary.BigEndian.PutUint64(b, uint64(time.Since(epoch)))
	b[8] = flags
	return b
}

func stampOf(p []byte) (ts time.Duration, flags byte) {
	if len(p) < 9 {
		return 0, 0
	}
	return time.Duration(binary.BigEndian.Uint64(p)), p[8]
}

func quietIndex(p []byte) int {
	if len(p) < 11 {
		return 0
	}
	return int(binary.BigEndian.Uint16(p[9:]))
}

func sinceStamp(ts time.Duration) time.Duration { return time.Since(epoch) - ts }

// countdown closes done when tick has been called n times.
type countdown struct {
	n    int64
	seen atomic.Int64
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{n: int64(n), done: make(chan struct{})}
	if n <= 0 {
		close(c.done)
	}
	return c
}

func (c *countdown) tick() {
	if c.seen.Add(1) == c.n {
		close(c.done)
	}
}

func (c *countdown) wait(ctx context.Context, what string) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d %s: %w", c.seen.Load(), c.n, what, ctx.Err())
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func rate(n int, d time.Duration, note string) Result {
	return Result{Note: note, Metrics: map[string]float64{
		mJobsPerSec: float64(n) / d.Seconds(),
		mElapsed:    d.Seconds(),
	}}
}

// percentiles uses nearest rank, so p99 of 200 samples is the 198th.
func percentiles(ds []time.Duration, note string) Result {
	if len(ds) == 0 {
		return Result{Note: note, Metrics: map[string]float64{}}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		return float64(s[nearestRank(p, len(s))]) / float64(time.Millisecond)
	}
	return Result{Note: note, Metrics: map[string]float64{mP50: at(0.50), mP99: at(0.99)}}
}

// nearestRank is the index of the p-th percentile in a sorted slice of n.
func nearestRank(p float64, n int) int {
	i := int(math.Ceil(p*float64(n))) - 1
	return max(0, min(i, n-1))
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO memory: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory: no used_memory field")
}

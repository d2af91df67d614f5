//go:build linux

// Package chaos runs headgate under injected faults and checks what survives: worker
// processes SIGKILLed or frozen under load, redis-server killed and restarted from its
// append-only file, frozen with SIGSTOP, connections delayed, stalled and cut mid-call by
// a proxy, and master failovers under Sentinel and Redis Cluster.
//
// A run enqueues jobs from producers in the test process, which retry each id until an
// enqueue of it returns no error (the job is acknowledged), and serves them from worker
// processes whose handlers write every execution to a ledger on a control Redis that no
// fault touches. Meanwhile a probe plays a stale holder in a namespace of its own: it holds
// a lease, lets it lapse, lets a successor take the job, and then writes as the old holder.
// At the end every acknowledged job is looked up in the ledger and the store. The
// invariants: no acknowledged job is lost, no stale write is accepted, no job is stuck
// after the lease; jobs executed more than once (at-least-once delivery) are counted, not
// refused.
package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/redis/go-redis/v9"
)

// Options shape a run.
type Options struct {
	Jobs        int           // jobs enqueued at least; producers go on until the faults are over
	Producers   int           // producer goroutines
	Rate        int           // enqueues per second, all producers together
	Workers     int           // worker processes
	Concurrency int           // handlers per worker process
	Lease       time.Duration // the workers' lease
	WorkMin     time.Duration // a handler's work takes between WorkMin and WorkMax
	WorkMax     time.Duration
	Rounds      int           // fault rounds
	Gap         time.Duration // quiet time after a round recovered, before the next
	Outage      time.Duration // how long a fault lasts (a frozen or dead server, a stall)
	Settle      time.Duration // how long the jobs of the system may take to finish after a round or at the end
	// WorkerCommand returns the command that starts a worker process: the test binary,
	// whose TestMain calls WorkerMain.
	WorkerCommand func() *exec.Cmd
	Control       *redis.Client // the ledger's server
	Dir           string        // worker logs
	Logf          func(format string, args ...any)
}

// Target is the deployment under test.
type Target struct {
	// Conn is how workers, producers and the probe reach it (through a proxy, when the
	// scenario has one).
	Conn Connection
	// Direct reaches it without the proxy, for the final check.
	Direct Connection
	// DurableReplicas is the producers' StoreConfig.DurableReplicas: replicated
	// deployments acknowledge an enqueue only once a replica has it.
	DurableReplicas int

	// What Setup started, for Inject.
	server   *redistest.Server
	proxy    *Proxy
	sentinel *redistest.Sentinel
	cluster  *redistest.Cluster
}

// Scenario is one kind of fault.
type Scenario struct {
	Name string
	// Rounds, when set, replaces Options.Rounds for this scenario.
	Rounds int
	// Setup starts the deployment; what it starts is stopped by cleanup (the test's).
	Setup func(ctx context.Context) (*Target, error)
	// Inject applies the round-th fault and returns when the fault is healed.
	Inject func(ctx context.Context, r *Run, round int) error
}

// Report is the outcome of one run.
type Report struct {
	Scenario      string
	Enqueued      int // ids the producers tried
	Acknowledged  int // ids whose enqueue returned no error
	Completed     int // acknowledged jobs completed in the store
	Executions    int // completed handler executions in all
	Lost          int // acknowledged, never executed and not in the store
	Duplicates    int // executions beyond the first of a job
	StaleAccepted int // writes by a superseded holder the store accepted
	StaleRefused  int
	Stuck         int // acknowledged, in the store, not completed by the end
	Faults        int
	// Recovery is the longest a round took, from the heal, until the jobs in flight at the
	// fault were done and a job enqueued after the heal was done too.
	Recovery time.Duration
	Elapsed  time.Duration
	Samples  []string // some lost or stuck ids, with what was found
}

// Violations lists the invariants the run broke.
func (r *Report) Violations() []string {
	var v []string
	if r.Lost > 0 {
		v = append(v, fmt.Sprintf("%d acknowledged jobs lost", r.Lost))
	}
	if r.StaleAccepted > 0 {
		v = append(v, fmt.Sprintf("%d stale writes accepted", r.StaleAccepted))
	}
	if r.Stuck > 0 {
		v = append(v, fmt.Sprintf("%d jobs stuck", r.Stuck))
	}
	if len(v) > 0 && len(r.Samples) > 0 {
		v = append(v, "e.g. "+strings.Join(r.Samples, ", "))
	}
	return v
}

// Table renders reports as a Markdown table.
func Table(reports []*Report) string {
	var b strings.Builder
	b.WriteString("| scenario | jobs | executions | lost | duplicates | stale accepted / refused | stuck | faults | recovery (max) | elapsed |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d / %d | %d | %d | %s | %s |\n", r.Scenario, r.Acknowledged,
			r.Executions, r.Lost, r.Duplicates, r.StaleAccepted, r.StaleRefused, r.Stuck, r.Faults,
			r.Recovery.Round(time.Millisecond), r.Elapsed.Round(100*time.Millisecond))
	}
	return b.String()
}

// Run is a scenario in progress; Inject functions act on it.
type Run struct {
	opts      Options
	sc        Scenario
	target    *Target
	namespace string
	runName   string
	ledger    *Ledger

	mu       sync.Mutex
	workers  []*workerProc
	nextID   int
	enqueued int                  // ids the producers tried
	acked    map[string]time.Time // acknowledged ids and when
	doneAt   map[string]time.Time // first completion seen in the ledger
	// healedAt is when the last fault was healed, firstNew when a job acknowledged after
	// it was first seen completed.
	healedAt, firstNew time.Time
	changed            chan struct{}
	errs               []error
}

// Execute runs sc: setup, load, Rounds faults each followed by its recovery, then the
// drain and the check. The error is for a run that could not be carried out; broken
// invariants are in the report.
func Execute(ctx context.Context, sc Scenario, opts Options) (*Report, error) {
	start := time.Now()
	target, err := sc.Setup(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: setup: %w", sc.Name, err)
	}
	run := &Run{
		opts: opts, sc: sc, target: target,
		namespace: "chaos-" + sc.Name,
		runName:   fmt.Sprintf("%s-%d", sc.Name, start.UnixNano()),
		acked:     map[string]time.Time{},
		doneAt:    map[string]time.Time{},
		changed:   make(chan struct{}, 1),
	}
	run.ledger = NewLedger(opts.Control, run.runName)
	return run.execute(ctx, start)
}

func (r *Run) logf(format string, args ...any) {
	if r.opts.Logf != nil {
		r.opts.Logf("%s: "+format, append([]any{r.sc.Name}, args...)...)
	}
}

func (r *Run) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *Run) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *Run) execute(ctx context.Context, start time.Time) (*Report, error) {
	for range r.opts.Workers {
		if _, err := r.StartWorker(); err != nil {
			return nil, err
		}
	}
	defer r.stopWorkers()

	loadCtx, stopLoad := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { stopLoad(); bg.Wait() }()
	bg.Go(func() { r.follow(loadCtx) })
	var producers sync.WaitGroup
	prodDone := make(chan struct{})
	faultsOver := make(chan struct{})
	for p := range r.opts.Producers {
		producers.Go(func() { r.produce(loadCtx, p, faultsOver) })
	}
	go func() { producers.Wait(); close(prodDone) }()
	probe := &probe{run: r}
	bg.Go(func() { probe.loop(loadCtx) })

	// Warm up: the system works before the first fault.
	if !r.await(ctx, r.opts.Settle, func() bool { return len(r.doneAt) >= min(50, r.opts.Jobs/10) }) {
		return nil, fmt.Errorf("%s: no work done within %s before the first fault%s", r.sc.Name, r.opts.Settle, r.workerLogs())
	}
	report := &Report{Scenario: r.sc.Name}
	for round := range cmp.Or(r.sc.Rounds, r.opts.Rounds) {
		before := r.unfinished()
		if err := r.sc.Inject(ctx, r, round); err != nil {
			return nil, fmt.Errorf("%s: fault %d: %w", r.sc.Name, round, err)
		}
		healed := time.Now()
		report.Faults++
		r.mu.Lock()
		r.healedAt, r.firstNew = healed, time.Time{}
		r.mu.Unlock()
		// Recovered: what was in flight at the fault is done, and so is a job enqueued
		// after the heal (producers and workers are back).
		ok := r.await(ctx, r.opts.Settle, func() bool { return r.allDone(before) && !r.firstNew.IsZero() })
		r.mu.Lock()
		rec := max(r.lastDoneLocked(before).Sub(healed), r.firstNew.Sub(healed), 0)
		r.mu.Unlock()
		if !ok {
			rec = time.Since(healed)
			r.logf("round %d: not recovered after %s: %d of the %d jobs acknowledged before the fault unfinished",
				round, r.opts.Settle, r.countUnfinished(before), len(before))
		}
		report.Recovery = max(report.Recovery, rec)
		r.logf("round %d recovered %s after the heal (the %d jobs in flight at the fault done, and a new one)",
			round, rec.Round(time.Millisecond), len(before))
		t := time.NewTimer(r.opts.Gap) // steady state between faults
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	// The rest of the load, then every acknowledged job must finish.
	close(faultsOver)
	select {
	case <-prodDone:
	case <-ctx.Done():
	}
	r.await(ctx, r.opts.Settle, func() bool { return r.allDone(nil) })
	stopLoad()
	bg.Wait()
	<-prodDone
	r.mu.Lock()
	err := errors.Join(r.errs...)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.sc.Name, err)
	}
	if err := r.stopWorkers(); err != nil {
		r.logf("%v", err)
	}
	if err := r.check(ctx, report); err != nil {
		return nil, err
	}
	report.StaleAccepted += probe.accepted
	report.StaleRefused += probe.refused
	report.Samples = append(report.Samples, probe.details...)
	report.Elapsed = time.Since(start)
	return report, nil
}

// StartWorker starts one more worker process.
func (r *Run) StartWorker() (string, error) {
	r.mu.Lock()
	r.nextID++
	id := fmt.Sprintf("w%d", r.nextID)
	r.mu.Unlock()
	spec := workerSpec{Conn: r.target.Conn, Control: r.opts.Control.Options().Addr, Run: r.runName,
		Namespace: r.namespace, ID: id, Concurrency: r.opts.Concurrency, Lease: r.opts.Lease,
		WorkMin: r.opts.WorkMin, WorkMax: r.opts.WorkMax}
	p, err := startWorkerProc(r.opts.WorkerCommand(), spec, filepath.Join(r.opts.Dir, r.sc.Name+"-"+id+".log"))
	if err != nil {
		return "", fmt.Errorf("start worker %s: %w", id, err)
	}
	r.mu.Lock()
	r.workers = append(r.workers, p)
	r.mu.Unlock()
	return id, nil
}

// KillWorker SIGKILLs a random worker process and returns its id.
func (r *Run) KillWorker() string {
	r.mu.Lock()
	i := rand.N(len(r.workers))
	p := r.workers[i]
	r.workers = slices.Delete(r.workers, i, i+1)
	r.mu.Unlock()
	p.kill()
	return p.id
}

// FreezeWorker SIGSTOPs a random worker process for d, then SIGCONTs it: its leases lapse
// meanwhile and, woken, it is a stale holder of the jobs it was running.
func (r *Run) FreezeWorker(ctx context.Context, d time.Duration) (string, error) {
	r.mu.Lock()
	p := r.workers[rand.N(len(r.workers))]
	r.mu.Unlock()
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return "", err
	}
	pause(ctx, d)
	return p.id, p.signal(syscall.SIGCONT)
}

func (r *Run) stopWorkers() error {
	r.mu.Lock()
	ws := r.workers
	r.workers = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, p := range ws {
		wg.Go(func() { errs[i] = p.stop(30 * time.Second) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// workerLogs quotes the tail of every worker log, for an error message.
func (r *Run) workerLogs() string {
	files, _ := filepath.Glob(filepath.Join(r.opts.Dir, r.sc.Name+"-w*.log"))
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "\n--- %s ---\n%s", filepath.Base(f), logTail(f, 10))
	}
	return b.String()
}

type chaosArgs struct {
	N int `msgpack:"n"`
}

func (chaosArgs) Kind() string { return JobKind }

// produce enqueues jobs at this producer's share of the rate, retrying each id until an
// enqueue of it returns no error, until the faults are over and it has enqueued its
// share of Jobs: every fault strikes under load.
func (r *Run) produce(ctx context.Context, p int, faultsOver <-chan struct{}) {
	rdb := r.target.Conn.Client()
	defer rdb.Close()
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: r.namespace, Retention: time.Hour,
		DurableReplicas: r.target.DurableReplicas, DurableTimeout: time.Second})
	if err != nil {
		r.fail(err)
		return
	}
	share := r.opts.Jobs / r.opts.Producers
	if p < r.opts.Jobs%r.opts.Producers {
		share++
	}
	tick := time.NewTicker(time.Duration(r.opts.Producers) * time.Second / time.Duration(r.opts.Rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		if n >= share {
			select {
			case <-faultsOver:
				return
			default:
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		id := fmt.Sprintf("p%d-%06d", p, n)
		r.mu.Lock()
		r.enqueued++
		r.mu.Unlock()
		backoff := 5 * time.Millisecond
		for {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := client.Enqueue(cctx, chaosArgs{N: n}, &rqueue.EnqueueOpts{ID: id})
			cancel()
			if err == nil {
				r.mu.Lock()
				r.acked[id] = time.Now()
				r.mu.Unlock()
				break
			}
			if !pause(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		}
	}
}

// follow reads completion events from the ledger into doneAt.
func (r *Run) follow(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ids, err := r.ledger.nextEvents(context.WithoutCancel(ctx), 1000)
		if err != nil && ctx.Err() == nil {
			r.fail(fmt.Errorf("read the ledger: %w", err))
			return
		}
		if len(ids) > 0 {
			now := time.Now()
			r.mu.Lock()
			for _, id := range ids {
				if _, ok := r.doneAt[id]; !ok {
					r.doneAt[id] = now
					if at, ok := r.acked[id]; ok && r.firstNew.IsZero() && !r.healedAt.IsZero() && at.After(r.healedAt) {
						r.firstNew = now
					}
				}
			}
			r.mu.Unlock()
			r.notify()
			continue
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// unfinished returns the acknowledged jobs not yet seen completed.
func (r *Run) unfinished() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id := range r.acked {
		if _, ok := r.doneAt[id]; !ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (r *Run) countUnfinished(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := r.doneAt[id]; !ok {
			n++
		}
	}
	return n
}

// allDone reports whether every id of ids (nil: every acknowledged id) was seen
// completed. The caller holds r.mu (await does).
func (r *Run) allDone(ids []string) bool {
	if ids == nil {
		for id := range r.acked {
			if _, ok := r.doneAt[id]; !ok {
				return false
			}
		}
		return true
	}
	for _, id := range ids {
		if _, ok := r.doneAt[id]; !ok {
			return false
		}
	}
	return true
}

func (r *Run) lastDoneLocked(ids []string) time.Time {
	var last time.Time
	for _, id := range ids {
		if t := r.doneAt[id]; t.After(last) {
			last = t
		}
	}
	return last
}

// await waits until ok (called with r.mu held) holds or timeout passes.
func (r *Run) await(ctx context.Context, timeout time.Duration, ok func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		done := ok()
		r.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-r.changed:
		case <-deadline.C:
			r.mu.Lock()
			defer r.mu.Unlock()
			return ok()
		case <-ctx.Done():
			return false
		}
	}
}

// check looks every acknowledged job up in the ledger and in the store.
func (r *Run) check(ctx context.Context, rep *Report) error {
	counts, err := r.ledger.DoneCounts(ctx)
	if err != nil {
		return err
	}
	rep.StaleAccepted, rep.StaleRefused, err = r.ledger.Stale(ctx)
	if err != nil {
		return err
	}
	details, err := r.ledger.StaleAccepted(ctx)
	if err != nil {
		return err
	}
	for _, d := range details {
		rep.sample(d)
	}
	rdb := r.target.Direct.Client()
	defer rdb.Close()
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: r.namespace})
	if err != nil {
		return err
	}
	r.mu.Lock()
	acked := make([]string, 0, len(r.acked))
	for id := range r.acked {
		acked = append(acked, id)
	}
	rep.Enqueued = r.enqueued
	r.mu.Unlock()
	slices.Sort(acked)
	rep.Acknowledged = len(acked)
	for _, n := range counts {
		rep.Executions += n
		rep.Duplicates += max(n-1, 0)
	}
	for _, id := range acked {
		j, err := getJob(ctx, store, id)
		switch {
		case errors.Is(err, headgate.ErrJobNotFound) && counts[id] == 0:
			rep.Lost++
			rep.sample(id + " (lost)")
		case err != nil && !errors.Is(err, headgate.ErrJobNotFound):
			return fmt.Errorf("check %s: %w", id, err)
		case err == nil && j.State == headgate.StateCompleted:
			rep.Completed++
		default:
			rep.Stuck++
			state := "deleted"
			if j != nil {
				state = string(j.State)
			}
			rep.sample(fmt.Sprintf("%s (%s, executed %d times)", id, state, counts[id]))
		}
	}
	return nil
}

func (rep *Report) sample(s string) {
	if len(rep.Samples) < 10 {
		rep.Samples = append(rep.Samples, s)
	}
}

// getJob is Store.GetJob retried while the deployment settles (a cluster client may still
// be told MOVED after a failover).
func getJob(ctx context.Context, store *headgate.Store, id string) (*headgate.Job, error) {
	var err error
	for range 50 {
		var j *headgate.Job
		j, err = store.GetJob(ctx, id)
		if err == nil || errors.Is(err, headgate.ErrJobNotFound) {
			return j, err
		}
		if !pause(ctx, 100*time.Millisecond) {
			break
		}
	}
	return nil, err
}

// pause waits d unless ctx ends first, and reports whether it waited d.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

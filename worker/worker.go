package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// hardStopGrace bounds each step of a shutdown after the graceful wait: confirming the
// acks (hand-backs included) and letting cancelled handlers return.
const hardStopGrace = 5 * time.Second

// Worker runs handlers for the jobs it admits from a namespace's queues. Create it with
// New, register handlers with Handle or HandleFunc, then Run it (or Start and Stop it).
type Worker struct {
	cfg   Config
	rdb   redis.UniversalClient
	store *headgate.Store
	log   *slog.Logger

	mu       sync.Mutex
	handlers map[string]HandlerFunc
	started  bool
	stopMu   sync.Mutex // serializes Stop callers: the first one shuts down
	stopErr  error

	queuesExpanded bool // set by ExpandQueues, which may rewrite cfg.Queues once

	// Set by Start.
	waiter      *waiter         // the connection of the blocking wait for work
	cancels     *redis.PubSub   // the namespace's cancel channel
	waitStore   *headgate.Store // the store on waiter's client
	ioCtx       context.Context // store calls of the worker's own loops; cancelled at teardown
	cancelIO    context.CancelFunc
	jobsCtx     context.Context // parent of handler contexts; cancelled only by kill
	cancelJobs  context.CancelCauseFunc
	fetchCtx    context.Context
	cancelFetch context.CancelFunc
	dutyCtx     context.Context
	cancelDuty  context.CancelFunc

	work     chan *execution // admitted jobs, to the pool
	finished chan *execution // attempts to ack, to the acker
	slotFree chan struct{}   // a pool slot was released (fetcher)
	idleAck  chan struct{}   // no job is running (acker)
	nudge    chan struct{}   // a job was rescheduled: the promote duty recomputes its sleep
	// timerNudge: a handler armed a workflow timer, or a timer sooner than any was armed
	// anywhere (the timers-armed channel): the timers duty recomputes its sleep.
	timerNudge chan struct{}

	running   gauge // admitted jobs whose handler has not returned
	unsettled gauge // admitted jobs not yet acked, handed back or lost
	poolAlive gauge // pool goroutines

	outage outage // whether Redis answers, for one log line per outage
	// probeEvery and pingRedis are the outage probe's period and call (tests replace them).
	probeEvery time.Duration
	pingRedis  func(context.Context) error
	repeats    *repeatLimiter // thins the lines of repeated failures

	heldMu sync.Mutex
	held   map[headgate.LeaseRef]*execution // leases to renew

	leasePrefix string // "<worker id>-<random>-": the lease ids of this Worker value
	leaseSeq    atomic.Uint64
	stopping    atomic.Bool
	killed      atomic.Bool

	stopRequested chan struct{} // closed when a shutdown starts
	stopped       chan struct{} // closed when a shutdown is over
	dead          chan struct{} // closed at teardown: every loop exits
	fetchDone     chan struct{}
	loops         sync.WaitGroup // fetcher, acker, renewer
	dutyLoops     sync.WaitGroup
	goroutines    atomic.Int64 // the worker's own goroutines, for leak checks

	// onAck, when set (by tests, before Start), sees every ack the store answered.
	onAck func(jobID string, o headgate.Outcome, st headgate.State, err error)
	// onDutyPass, when set (by tests, before Start), sees every duty pass that ended.
	onDutyPass func(duty string, err error)
}

// New returns a worker for cfg.Namespace on rdb. It fails when the config is invalid.
func New(rdb redis.UniversalClient, cfg *Config) (*Worker, error) {
	if rdb == nil {
		return nil, &headgate.InvalidError{Field: "rdb", Reason: "is nil: New needs a Redis client"}
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	store, err := headgate.NewStore(rdb, c.storeConfig())
	if err != nil {
		return nil, err
	}
	return &Worker{
		cfg:           *c,
		leasePrefix:   c.ID + "-" + strconv.FormatUint(rand.Uint64(), 36) + "-",
		rdb:           rdb,
		store:         store,
		log:           c.Logger.With("worker", c.ID),
		handlers:      map[string]HandlerFunc{},
		stopRequested: make(chan struct{}),
		stopped:       make(chan struct{}),
		dead:          make(chan struct{}),
		fetchDone:     make(chan struct{}),
		running:       newGauge(),
		unsettled:     newGauge(),
		poolAlive:     newGauge(),
		repeats:       newRepeatLimiter(c.LogRepeatInterval),
		probeEvery:    probeInterval,
		pingRedis:     func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	}, nil
}

func (c *Config) storeConfig() *headgate.StoreConfig {
	return &headgate.StoreConfig{Namespace: c.Namespace, CrashLimit: c.CrashLimit, RetryBase: c.RetryBase,
		RetryCap: c.RetryCap, CrashRetryBase: c.CrashRetryBase, Scripts: c.Scripts}
}

// ID returns the worker's id in the store.
func (w *Worker) ID() string { return w.cfg.ID }

// Store returns the store the worker runs on.
func (w *Worker) Store() *headgate.Store { return w.store }

// ErrAlreadyStarted is returned by Start and Run on a worker that was started before.
var ErrAlreadyStarted = errors.New("worker: already started")

// Start starts admitting and running jobs and returns once Redis answered. Values of ctx
// reach the handlers' contexts; its cancellation does not (use Stop), but it bounds the
// wait for Redis. It fails when Redis does not answer within Config.StartTimeout (the
// error names the address), when ctx ends first (the error says the start was cancelled
// and wraps ctx's cause), or when the worker was started before or has no handler: a worker without handlers would fail an attempt of
// every job it admits ("no handler for kind"), spending the jobs' attempts for nothing.
// It also fails on a server where every call would fail or jobs would be lost:
// *headgate.ReplicaError, *headgate.EvictionPolicyError (unless
// Config.AllowEvictionPolicy), and *headgate.FormatError for a namespace stored in
// another format.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return ErrAlreadyStarted
	}
	if len(w.handlers) == 0 {
		return errors.New("worker: no handlers registered: register one with Handle or HandleFunc before starting")
	}
	if err := w.ping(ctx); err != nil {
		return err
	}
	// A server that evicts keys would delete jobs silently (headgate.CheckServer).
	cctx, cancel := context.WithTimeout(ctx, w.cfg.StartTimeout)
	_, err := headgate.CheckServer(cctx, w.rdb)
	cancel()
	if err != nil {
		var ev *headgate.EvictionPolicyError
		if errors.As(err, &ev) && !w.cfg.AllowEvictionPolicy {
			return fmt.Errorf("worker: %w (set Config.AllowEvictionPolicy to start anyway)", err)
		}
		var re *headgate.ReplicaError
		if errors.As(err, &re) {
			// Every call of the worker would fail with READONLY, logged for ever.
			return fmt.Errorf("worker: %w", err)
		}
		w.log.Warn("worker: server check", "err", err)
	}
	// A namespace of another storage format: every call would fail with the same
	// *FormatError, logged for ever.
	cctx, cancel = context.WithTimeout(ctx, w.cfg.StartTimeout)
	err = w.store.CheckFormat(cctx)
	cancel()
	var fe *headgate.FormatError
	if errors.As(err, &fe) {
		return fmt.Errorf("worker: %w", err)
	}
	waiter := newWaiter(w.rdb)
	waitStore := w.store
	if waiter.client != nil {
		s, err := headgate.NewStore(waiter.client, w.cfg.storeConfig())
		if err != nil {
			waiter.close()
			return err
		}
		waitStore = s
	}
	sctx, cancel := context.WithTimeout(ctx, w.cfg.StartTimeout)
	cancels, err := w.subscribeCancels(sctx)
	cancel()
	if err != nil {
		waiter.close()
		if ctx.Err() != nil {
			return w.startCancelled(ctx)
		}
		return fmt.Errorf("worker: subscribe to the cancel channel on Redis at %s: %w", redisAddr(w.rdb), err)
	}
	w.started = true
	w.waiter, w.waitStore, w.cancels = waiter, waitStore, cancels

	n := w.cfg.Concurrency
	w.work = make(chan *execution, n)
	w.finished = make(chan *execution, 2*n)
	w.slotFree = make(chan struct{}, 1)
	w.idleAck = make(chan struct{}, 1)
	w.nudge = make(chan struct{}, 1)
	w.timerNudge = make(chan struct{}, 1)
	w.held = make(map[headgate.LeaseRef]*execution, 2*n)

	base := context.WithoutCancel(ctx)
	w.ioCtx, w.cancelIO = context.WithCancel(base)
	w.jobsCtx, w.cancelJobs = context.WithCancelCause(base)
	w.fetchCtx, w.cancelFetch = context.WithCancel(base)
	w.dutyCtx, w.cancelDuty = context.WithCancel(base)

	for range n {
		w.poolAlive.add(1)
		w.spawn(w.poolLoop, func() { w.poolAlive.add(-1) })
	}
	w.spawnLoop(func() {
		defer close(w.fetchDone)
		w.fetchLoop(w.fetchCtx)
	})
	w.spawnLoop(w.ackLoop)
	w.spawnLoop(w.renewLoop)
	w.spawnLoop(w.heartbeatLoop)
	w.spawnLoop(func() { w.cancelLoop(cancels) })
	for _, d := range w.duties() {
		w.dutyLoops.Add(1)
		w.spawn(func() { w.dutyLoop(w.dutyCtx, d) }, w.dutyLoops.Done)
	}
	w.log.Debug("worker started", "namespace", w.cfg.Namespace, "queues", w.cfg.Queues, "concurrency", n)
	return nil
}

// Run starts the worker and blocks until ctx is done or Stop is called, then shuts down
// as Stop does, waiting at most ShutdownTimeout for running jobs. It returns
// ErrAlreadyStarted, a start error, or what the shutdown returned.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-w.stopRequested:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownTimeout+3*hardStopGrace)
	defer cancel()
	return w.Stop(sctx)
}

// Stop shuts the worker down: it stops admitting and maintenance (giving its duties up),
// waits for running jobs until ShutdownTimeout passes or ctx is done, then cancels the
// handlers still running (context.Cause is ErrShutdown) and hands their jobs back at once
// (outcome hand_back in the job's history, not rate_limited): available to other workers,
// no attempt or crash counted. It returns once the acks are confirmed and the worker's
// goroutines have exited, after which the worker sends Redis nothing more; confirming
// acks and waiting for cancelled handlers take at most a few seconds each beyond the
// wait for running jobs. A handler that
// ignores its cancelled context is abandoned and reported in the error, and so are acks
// Redis did not confirm. Stop on a worker that never started does nothing; later calls
// return what the first returned.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	select {
	case <-w.stopped:
		return w.stopErr
	default:
	}
	w.stopErr = w.shutdown(ctx)
	close(w.stopped)
	return w.stopErr
}

// Stopped reports whether the worker's shutdown is over: Stop (or Run, which calls it)
// returned, and a later Stop returns what that one returned. A worker that never started,
// or whose shutdown is still under way, is not stopped.
func (w *Worker) Stopped() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

func (w *Worker) shutdown(ctx context.Context) error {
	w.stopping.Store(true)
	close(w.stopRequested)
	w.stopAdmitting()
	w.stopDuties()

	grace, cancel := context.WithTimeout(ctx, w.cfg.ShutdownTimeout)
	defer cancel()
	if !w.running.wait(grace.Done()) {
		n := w.handBack()
		w.log.Info("shutdown timeout passed: handing running jobs back", "jobs", n)
	}
	var errs []error
	if !w.unsettled.waitFor(hardStopGrace) {
		n := w.unsettled.load()
		w.log.Warn("shutdown: acks not confirmed; those jobs will be reclaimed when their leases expire", "jobs", n)
		errs = append(errs, fmt.Errorf("worker: %d acks not confirmed at shutdown", n))
	}
	w.teardown()
	if !w.poolAlive.waitFor(hardStopGrace) {
		n := w.poolAlive.load()
		w.log.Warn("shutdown: handlers ignored their cancelled context and are still running", "handlers", n)
		errs = append(errs, fmt.Errorf("worker: %d handlers still running after shutdown: they ignore context cancellation", n))
	}
	w.log.Debug("worker stopped")
	return errors.Join(errs...)
}

// stopAdmitting stops the fetcher and waits for it, interrupting its blocking wait for
// work. An admission in flight completes first, so none is lost half way.
func (w *Worker) stopAdmitting() {
	w.cancelFetch()
	w.waiter.interrupt(w.ioCtx, w.rdb, w.fetchDone)
	w.waiter.close()
}

// stopDuties ends the maintenance loops, which give their duties up unless the worker
// was killed.
func (w *Worker) stopDuties() {
	w.cancelDuty()
	w.dutyLoops.Wait()
}

// teardown ends every loop and releases the pool: nothing is sent to Redis afterwards
// except by handlers that ignore their cancelled context (and their store calls fail).
func (w *Worker) teardown() {
	close(w.dead)
	w.cancelIO()
	w.loops.Wait()
	_ = w.cancels.Close()
	close(w.work)
}

// kill stops the worker the way a crash does: no ack, no hand-back, no duty release.
// Handlers are cancelled with ErrLeaseLost. Their jobs stay running in the store until
// their leases expire and the reclaimer takes them. Tests use it to simulate a dead worker.
func (w *Worker) kill() {
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	select {
	case <-w.stopped:
		return
	default:
	}
	w.killed.Store(true)
	w.stopping.Store(true)
	close(w.stopRequested)
	w.cancelJobs(ErrLeaseLost)
	w.stopAdmitting()
	w.stopDuties()
	w.teardown()
	w.poolAlive.waitFor(hardStopGrace)
	close(w.stopped)
}

// spawn runs fn on a goroutine counted for leak checks; exited runs after the count
// dropped, so whoever waits on it sees the goroutine gone.
func (w *Worker) spawn(fn, exited func()) {
	w.goroutines.Add(1)
	go func() {
		defer func() {
			w.goroutines.Add(-1)
			exited()
		}()
		fn()
	}()
}

// spawnLoop runs one of the worker's loops, which teardown waits for.
func (w *Worker) spawnLoop(fn func()) {
	w.loops.Add(1)
	w.spawn(fn, w.loops.Done)
}

// hold records an admitted job's lease for renewal.
func (w *Worker) hold(e *execution) {
	w.heldMu.Lock()
	w.held[e.lease] = e
	w.heldMu.Unlock()
}

// settle forgets a job whose attempt is over for this worker (acked, handed back, lost
// or given up): its lease is no longer renewed.
func (w *Worker) settle(e *execution) {
	w.heldMu.Lock()
	delete(w.held, e.lease)
	w.heldMu.Unlock()
	e.cancel(context.Canceled)
	w.unsettled.add(-1)
}

// heldSnapshot returns the executions whose leases the worker holds.
func (w *Worker) heldSnapshot() []*execution {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	out := make([]*execution, 0, len(w.held))
	for _, e := range w.held {
		out = append(out, e)
	}
	return out
}

// handBack cancels every job still running and queues its hand-back (OutcomeHandBack) for
// the acker. It returns how many it handed back.
func (w *Worker) handBack() int {
	n := 0
	for _, e := range w.heldSnapshot() {
		if !e.state.CompareAndSwap(stateRunning, stateHandedBack) {
			continue
		}
		e.outcome, e.opts = headgate.OutcomeHandBack, headgate.AckOpts{}
		e.cancel(ErrShutdown)
		select {
		case w.finished <- e:
			n++
		case <-w.dead:
			return n
		}
	}
	return n
}

// notify sends a wake-up on a channel of capacity 1 without blocking: one pending signal
// is enough, since its receiver re-reads the state it is about.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// gauge is a counter that signals its single waiter when it reaches zero.
type gauge struct {
	n    *atomic.Int64
	zero chan struct{}
}

func newGauge() gauge { return gauge{n: new(atomic.Int64), zero: make(chan struct{}, 1)} }

func (g gauge) add(d int64) int64 {
	v := g.n.Add(d)
	if v == 0 {
		notify(g.zero)
	}
	return v
}

func (g gauge) load() int64 { return g.n.Load() }

// wait blocks until the gauge is zero (true) or done is closed (false).
func (g gauge) wait(done <-chan struct{}) bool {
	for g.n.Load() > 0 {
		select {
		case <-g.zero:
		case <-done:
			return g.n.Load() <= 0
		}
	}
	return true
}

// waitFor blocks until the gauge is zero (true) or d passed (false).
func (g gauge) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for g.n.Load() > 0 {
		select {
		case <-g.zero:
		case <-t.C:
			return g.n.Load() <= 0
		}
	}
	return true
}

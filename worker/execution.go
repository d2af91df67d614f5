package worker

import (
	"context"
	"errors"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headgate/headgate"
)

// waitTimeout is how long an idle worker blocks for a wake-up before it admits again:
// the bounded poll that covers a missed wake-up. One second is the shortest timeout
// BLPOP takes from go-redis.
const waitTimeout = time.Second

// States of an execution. Whoever moves it out of stateRunning owns its ending: the
// pool when the handler returns (finished), the shutdown when it hands the job back, the
// renewer when the lease is lost.
const (
	stateRunning int32 = iota
	stateFinished
	stateHandedBack
	stateLost
)

// execution is one admitted attempt of a job.
type execution struct {
	w      *Worker
	claim  headgate.Claim
	lease  headgate.LeaseRef
	ctx    context.Context // the handler's context, before JobTimeout
	cancel context.CancelCauseFunc
	// deadline is when, by the worker's clock, the lease runs out unless renewed
	// (unix ns). It errs early: it counts from before the call that set the lease.
	deadline atomic.Int64
	state    atomic.Int32

	// batch counts the jobs of its admission whose handlers have not returned, under a
	// started worker (fetchLoop); nil in a Work call.
	batch *atomic.Int64

	// settledByHandler: the handler's own transition acked the job (Settled); no ack.
	settledByHandler bool

	// Set by the owner of the ending (see the states), read by the acker.
	outcome headgate.Outcome
	opts    headgate.AckOpts

	mu     sync.Mutex // guards what the handler records
	logs   []string
	result *headgate.Blob
	done   []string // steps done, this attempt's and earlier ones'
	step   string   // step in progress
}

type ctxKey struct{}

// executionFrom returns the execution whose handler context ctx is, or nil.
func executionFrom(ctx context.Context) *execution {
	e, _ := ctx.Value(ctxKey{}).(*execution)
	return e
}

// newExecution makes the execution of an admitted claim; parent is the parent of its
// handler's context (the started worker's jobsCtx, or the context of a Work call).
func (w *Worker) newExecution(parent context.Context, c headgate.Claim, deadline time.Time) *execution {
	e := &execution{w: w, claim: c, lease: c.LeaseRef()}
	e.done = append([]string(nil), c.Checkpoint.Done...)
	e.ctx, e.cancel = context.WithCancelCause(context.WithValue(parent, ctxKey{}, e))
	e.deadline.Store(deadline.UnixNano())
	return e
}

func (e *execution) expired(now time.Time) bool { return now.UnixNano() >= e.deadline.Load() }

// nextLeaseID names one admission call; with the fence it identifies each lease. It is
// unique to the call, also across workers that share an id (a fixed Config.ID, a process
// restarted): the store takes a second call under one lease id for a repeat of the first
// (go-redis resending it after a lost reply) and answers it with the first call's jobs.
func (w *Worker) nextLeaseID() string {
	return w.leasePrefix + strconv.FormatUint(w.leaseSeq.Add(1), 36)
}

// admitWindow is the longest a busy worker waits for more pool slots to free before it
// admits: each admission costs Redis a fixed part besides its jobs' (the call, its reads
// of the queue's structures), so one for the whole pool costs less than one per slot.
const admitWindow = time.Millisecond

// fetchLoop admits jobs while the pool has free slots, in batches of up to the free
// slots, and blocks on the queues' wake-up lists when there is no work. While jobs of
// its last admission still run, it waits up to admitWindow for them to return first
// (moreSlots), so that slots freed one by one go in one admission; a worker with none of
// them running (idle, or busy with older jobs only) admits at once.
func (w *Worker) fetchLoop(ctx context.Context) {
	var bo backoff
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var last *atomic.Int64 // the jobs of the last admission whose handlers have not returned
	for ctx.Err() == nil {
		free := w.cfg.Concurrency - int(w.running.load())
		if free <= 0 {
			select {
			case <-w.slotFree:
			case <-ctx.Done():
				return
			}
			continue
		}
		if free < w.cfg.Concurrency && last != nil && last.Load() > 0 {
			free = w.moreSlots(ctx, timer, last)
			if ctx.Err() != nil {
				return
			}
		}
		// Probation: at most one job that crashed before runs here at a time, so a job
		// that kills the process does not take the jobs beside it down with it again.
		crashed := 0
		for _, e := range w.heldSnapshot() {
			if e.claim.Envelope.CrashAttempt > 0 {
				crashed++
			}
		}
		t0 := time.Now()
		// ioCtx, not ctx: a stop must not abandon an admission Redis may have applied.
		claims, err := w.store.Admit(w.ioCtx, headgate.AdmitRequest{
			Worker:     w.cfg.ID,
			LeaseID:    w.nextLeaseID(),
			Queues:     w.cfg.Queues,
			Capacity:   free,
			Lease:      w.cfg.Lease,
			Quantum:    w.cfg.Quantum,
			Probation:  true,
			MaxCrashed: max(0, 1-crashed),
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.next()
			backoffSleep(ctx, d, w.redisFailed("admit failed; retrying", err, "retry_in", d))
			continue
		}
		w.redisAnswered()
		bo.reset()
		if len(claims) == 0 {
			// The admission after a wake-up goes at once: none is held back for jobs that
			// ran before the queues were empty.
			last = nil
			if _, err := w.waitStore.WaitForWork(ctx, w.cfg.Queues, waitTimeout); err != nil && ctx.Err() == nil {
				d := bo.next()
				backoffSleep(ctx, d, w.redisFailed("wait for work failed; retrying", err, "retry_in", d))
			}
			continue
		}
		deadline := t0.Add(w.cfg.Lease)
		last = new(atomic.Int64)
		last.Store(int64(len(claims)))
		for _, c := range claims {
			e := w.newExecution(w.jobsCtx, c, deadline)
			e.batch = last
			w.running.add(1)
			w.unsettled.add(1)
			w.hold(e)
			w.work <- e // never blocks: at most Concurrency jobs run, and the buffer holds that many
		}
	}
}

// moreSlots waits until no job of the last admission is running, ctx is done or
// admitWindow passed, and returns the free slots.
func (w *Worker) moreSlots(ctx context.Context, timer *time.Timer, last *atomic.Int64) int {
	timer.Reset(admitWindow)
	defer timer.Stop()
	for last.Load() > 0 {
		select {
		case <-w.slotFree:
		case <-timer.C:
			return w.cfg.Concurrency - int(w.running.load())
		case <-ctx.Done():
			return 0
		}
	}
	return w.cfg.Concurrency - int(w.running.load())
}

// poolLoop is one of the Concurrency goroutines that run handlers.
func (w *Worker) poolLoop() {
	for e := range w.work {
		w.execute(e)
		if w.running.add(-1) == 0 {
			notify(w.idleAck)
		}
		// After running: the fetcher that sees its admission done sees the slots free.
		e.batch.Add(-1)
		notify(w.slotFree)
	}
}

// execute runs one attempt and, unless the job was handed back or lost meanwhile, queues
// its ack.
func (w *Worker) execute(e *execution) {
	ctx := e.ctx
	cancelTimeout := context.CancelFunc(func() {})
	if w.cfg.JobTimeout > 0 {
		ctx, cancelTimeout = context.WithTimeoutCause(ctx, w.cfg.JobTimeout, ErrJobTimeout)
	}
	err := w.call(ctx, e)
	timedOut := w.cfg.JobTimeout > 0 && errors.Is(context.Cause(ctx), ErrJobTimeout)
	cancelTimeout()
	if !e.state.CompareAndSwap(stateRunning, stateFinished) {
		return // handed back or lost: nothing of this attempt is kept
	}
	var settled *SettledError
	if errors.As(err, &settled) {
		w.settle(e) // the handler's own transition acked the job
		return
	}
	e.outcome, e.opts = outcome(err, timedOut, w.cfg.JobTimeout)
	w.logAttempt(e, err, e.outcome, timedOut)
	select {
	case w.finished <- e:
	case <-w.dead:
	}
}

// call runs the job's handler chain (see Middleware), turning a panic of a middleware
// into an error that carries the stack; the handler's own panics are recovered inside
// the chain.
func (w *Worker) call(ctx context.Context, e *execution) (err error) {
	h := w.handlers[e.claim.Envelope.Kind]
	if h == nil {
		h = w.unknownKind()
	}
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	c := e.claim
	return h(ctx, &c)
}

// ackRequest builds the ack of a finished or handed-back execution.
func (e *execution) ackRequest() headgate.AckRequest {
	opts := e.opts
	e.mu.Lock()
	if len(e.logs) > 0 {
		opts.Logs = append([]string(nil), e.logs...)
	}
	if e.outcome == headgate.OutcomeSuccess && e.result != nil {
		r := *e.result
		opts.Result = &r
	}
	e.mu.Unlock()
	return headgate.AckRequest{Lease: e.lease, Outcome: e.outcome, Opts: &opts}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

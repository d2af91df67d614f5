package rqueuetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
	"github.com/headgate/headgate/worker"
)

// Defaults of DrainOpts.
const (
	// DrainBatchDefault is the most jobs one round of a Drain admits.
	DrainBatchDefault = 100
	// DrainMaxAttemptsDefault bounds the attempts of one Drain.
	DrainMaxAttemptsDefault = 1000
	// DrainTimeoutDefault bounds how long one Drain may take.
	DrainTimeoutDefault = time.Minute
)

// DrainOpts configure a Drain; nil means the defaults. A negative Batch, MaxAttempts or
// Timeout fails the test, naming the field, before any job runs.
type DrainOpts struct {
	// Queues are the queues Kit.Drain serves. Defaults to every queue of the namespace,
	// including queues that get their first job while Drain runs. DrainWorker serves
	// its worker's queues and takes none here.
	Queues []string

	// AdvanceToDue steps the store clock, whenever nothing else can run, to the next
	// scheduled or retryable job, and goes on until no such job is left: retries,
	// snoozes and schedules all play out, without waiting. A running clock is frozen
	// by the first step. Defaults to false: Drain ends when nothing is available now.
	AdvanceToDue bool

	// Worker configures the worker Kit.Drain runs the handlers in: JobTimeout, RetryBase,
	// Lease, ID (for sticky jobs) and so on. Namespace and Queues are Drain's; the
	// settings of a started worker (Concurrency, ShutdownTimeout, the maintenance
	// intervals) do not apply, since Drain runs jobs with worker.Worker.Work, one at a
	// time. DrainWorker runs its worker as configured and takes none here.
	Worker *worker.Config

	// Batch is the most jobs one round admits (one worker.Worker.Work call): they run
	// one after the other, in admission order, and are acked together at the end of the
	// round. With Batch 1 each job is acked before the next is admitted. The jobs the
	// previous round handed back rate limited, first in line again, take places of their
	// own on top. Defaults to DrainBatchDefault (100).
	Batch int

	// MaxAttempts bounds the attempts of the Drain. When they are spent and a job is
	// still available to run, the Drain stops and fails the test, naming the jobs that
	// ran most: a handler that always snoozes or retries never drains while
	// AdvanceToDue steps the clock. Defaults to DrainMaxAttemptsDefault (1000).
	MaxAttempts int

	// Timeout bounds the Drain: it is the deadline of the handlers' contexts. When it
	// passes, the handler running has its context cancelled, its job is handed back
	// unless it succeeds, and Drain fails the test listing the jobs left available or
	// running. A handler that ignores its context is not interrupted.
	// Defaults to DrainTimeoutDefault (1m).
	Timeout time.Duration
}

// DrainResult is what a Drain did.
type DrainResult struct {
	// Attempts counts the attempts that ran: handler calls, and jobs the worker ended
	// without calling a handler (no handler for the kind, a payload that does not decode).
	Attempts int
	// Outcomes counts the attempts by how the worker acked them. An attempt whose ack
	// the store rejected because the lease was no longer held (the handler cancelled its
	// own job, say) counts as headgate.OutcomeLeaseLost.
	Outcomes map[headgate.Outcome]int
	// Advanced is how far AdvanceToDue stepped the store clock.
	Advanced time.Duration
}

// String returns a summary such as "3 attempts: success=2 skip=1" or, when AdvanceToDue
// stepped the clock, "1 attempt: success=1; clock advanced 10m" (durations as the
// headgate command prints them).
func (r DrainResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", r.Attempts, plural(r.Attempts, "attempt", "attempts"))
	sep := ": "
	for o := headgate.OutcomeSuccess; o <= headgate.OutcomeLeaseLost; o++ {
		if n := r.Outcomes[o]; n > 0 {
			fmt.Fprintf(&b, "%s%s=%d", sep, o, n)
			sep = " "
		}
	}
	if r.Advanced > 0 {
		fmt.Fprintf(&b, "; clock advanced %s", humandur.String(r.Advanced))
	}
	return b.String()
}

// Drain runs the kit's handlers (see Handle) on the jobs of the namespace until nothing
// is left to run, and returns how many attempts ran and how they ended.
//
// It works in rounds. Each round makes the due scheduled and retryable jobs available
// (Store.PromoteDue) and runs up to DrainOpts.Batch available jobs with
// worker.Worker.Work, in a worker with the kit's handlers: on the goroutine that called
// Drain, one after the other, in admission order, acked together at the end of the
// round. When nothing is left to run, Drain ends or, with AdvanceToDue, steps the store
// clock to the next due job and goes on. It fails the test when the kit has no handler,
// when a store call fails, or when MaxAttempts or Timeout is reached.
//
// The handlers run in a real worker, so their context helpers, acks and outcome mapping
// are production's. Jobs that no handler takes are admitted all the same and their attempt
// fails ("no handler for kind"), retried with backoff as a production worker does; jobs
// whose payload does not decode are parked as undecodable.
// Jobs that cannot be admitted (paused queue, quarantined fingerprint, pinned to another
// worker, a rate class without tokens) are left as they are.
//
// A job that ends rate limited is available again at once, first in line: a round runs
// it at most once, and Drain ends (or steps the clock) when the only jobs left available
// are the ones the last round handed back, or when a round ran nothing but such
// hand-backs. A rate-limited job thus runs once per round, and once more when the
// queues also hold jobs that cannot be admitted.
//
// Since handlers run on the calling goroutine, t.Fatal and t.FailNow in a handler stop
// the test as usual (the worker acks the jobs of the round on the way out), and a
// handler may share the test's variables without locks. With a frozen clock (Freeze) a
// Drain is deterministic. With a running clock, retries and snoozes that fall due while
// it runs are run too.
func (k *Kit) Drain(ctx context.Context, opts *DrainOpts) DrainResult {
	k.fail.Helper()
	return drain(ctx, k.fail, k, opts)
}

// DrainWorker is Kit.Drain with a worker of the caller's own, made with worker.New and
// given its handlers, never started: the worker's handlers, queues and config are used
// as they are, on the store it was made for (Worker.Store), whose clock AdvanceToDue
// steps. DrainOpts.Queues and DrainOpts.Worker must be nil.
//
// Use it to test the very worker a program builds, handler registrations included.
func DrainWorker(ctx context.Context, t testing.TB, w *worker.Worker, opts *DrainOpts) DrainResult {
	t.Helper()
	return drainWorker(ctx, t, w, opts)
}

// errOverLimit: the Drain spent MaxAttempts attempts.
var errOverLimit = errors.New("too many attempts")

// drainer runs one Drain.
type drainer struct {
	t     tb
	store *headgate.Store
	opts  DrainOpts
	// w runs the jobs; build, when set, makes it anew for the queues served.
	w     *worker.Worker
	build func(queues []string) *worker.Worker
	// queues are the queues served; nil for a worker of the caller's (all are counted).
	queues []string

	res  DrainResult
	runs map[string]*jobRuns
}

// jobRuns is what a Drain knows of one job.
type jobRuns struct {
	id, kind string
	n        int
	last     headgate.Outcome
	err      error
}

func drain(ctx context.Context, t tb, k *Kit, opts *DrainOpts) DrainResult {
	t.Helper()
	var o DrainOpts
	if opts != nil {
		o = *opts
	}
	k.mu.Lock()
	nh := len(k.handlers)
	k.mu.Unlock()
	if nh == 0 {
		fatalf(t, "rqueuetest: Drain: the kit has no handlers: register them with rqueuetest.Handle or rqueuetest.HandleFunc")
	}
	d := newDrainer(t, k.Store, o)
	d.queues = slices.Clone(o.Queues)
	if d.queues == nil {
		for _, st := range d.stats(ctx) {
			d.queues = append(d.queues, st.Queue)
		}
		if len(d.queues) == 0 {
			d.queues = []string{worker.QueueDefault}
		}
	}
	var cfg worker.Config
	if o.Worker != nil {
		cfg = *o.Worker
	}
	d.build = func(queues []string) *worker.Worker {
		c := cfg
		c.Queues = slices.Clone(queues)
		return k.newWorker(&c)
	}
	return d.run(ctx)
}

func drainWorker(ctx context.Context, t tb, w *worker.Worker, opts *DrainOpts) DrainResult {
	t.Helper()
	var o DrainOpts
	if opts != nil {
		o = *opts
	}
	if w == nil {
		fatalf(t, "rqueuetest: DrainWorker: the worker is nil")
	}
	if o.Queues != nil || o.Worker != nil {
		fatalf(t, "rqueuetest: DrainWorker: DrainOpts.Queues and DrainOpts.Worker configure the worker Kit.Drain builds; "+
			"DrainWorker runs worker %s as it is: leave them nil", w.ID())
	}
	d := newDrainer(t, w.Store(), o)
	d.w = w
	return d.run(ctx)
}

func newDrainer(t tb, store *headgate.Store, o DrainOpts) *drainer {
	return &drainer{t: t, store: store, opts: o, runs: map[string]*jobRuns{},
		res: DrainResult{Outcomes: map[headgate.Outcome]int{}}}
}

func (d *drainer) run(ctx context.Context) DrainResult {
	d.t.Helper()
	for _, f := range []struct {
		name     string
		negative bool
		v        any
	}{
		{"Batch", d.opts.Batch < 0, d.opts.Batch},
		{"MaxAttempts", d.opts.MaxAttempts < 0, d.opts.MaxAttempts},
		{"Timeout", d.opts.Timeout < 0, d.opts.Timeout},
	} {
		if f.negative {
			fatalf(d.t, "rqueuetest: Drain: DrainOpts.%s is negative (%v): leave it 0 for the default", f.name, f.v)
		}
	}
	timeout := cmp.Or(d.opts.Timeout, DrainTimeoutDefault)
	maxAttempts := cmp.Or(d.opts.MaxAttempts, DrainMaxAttemptsDefault)
	batch := cmp.Or(d.opts.Batch, DrainBatchDefault)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if d.build != nil {
		d.w = d.build(d.queues)
	}

	n := batch
	handedBack := 0 // jobs the last round handed back rate limited: available, first in line
	for {
		if ctx.Err() != nil {
			d.failBusy(ctx.Err(), timeout)
		}
		promoted, next := d.promote(ctx)
		stats := d.stats(ctx)
		if d.build != nil && d.opts.Queues == nil && d.addQueues(stats) {
			d.w = d.build(d.queues) // a handler enqueued into a new queue: serve it too
		}
		if promoted > 0 || d.available(stats) > handedBack {
			if d.res.Attempts >= maxAttempts {
				d.failBusy(errOverLimit, timeout)
			}
			asked := min(n, maxAttempts-d.res.Attempts)
			attempts, err := d.w.Work(ctx, asked)
			d.record(attempts)
			if err != nil {
				d.failWork(ctx, err, timeout)
			}
			progress := false
			handedBack = 0
			for _, a := range attempts {
				if (a.Outcome == headgate.OutcomeRateLimited || a.Outcome == headgate.OutcomeHandBack) && a.State == headgate.StateAvailable {
					handedBack++
				} else {
					progress = true
				}
			}
			if progress || len(attempts) == asked {
				// Go on; the hand-backs take the first places of the next round.
				n = batch + handedBack
				continue
			}
			// Nothing but hand-backs, and nothing else was admitted: nothing else can run.
		}
		if !d.opts.AdvanceToDue || next.IsZero() {
			return d.res
		}
		if step := next.Sub(storeTime(d.t, d.store)); step > 0 {
			advanceClock(d.t, d.store, step)
			d.res.Advanced += step
		}
	}
}

// record counts the attempts of a round.
func (d *drainer) record(attempts []worker.Attempt) {
	for _, a := range attempts {
		o := a.Outcome
		var rejected *headgate.LeaseRejectedError
		if errors.As(a.AckErr, &rejected) {
			o = headgate.OutcomeLeaseLost
		}
		d.res.Attempts++
		d.res.Outcomes[o]++
		r := d.runs[a.JobID]
		if r == nil {
			r = &jobRuns{id: a.JobID, kind: a.Kind}
			d.runs[a.JobID] = r
		}
		r.n++
		r.last, r.err = o, a.Err
	}
}

// promote makes every due scheduled and retryable job available and returns how many it
// promoted and when the next one is due.
func (d *drainer) promote(ctx context.Context) (int, time.Time) {
	d.t.Helper()
	n, next, err := promoteAll(ctx, d.store)
	if err != nil {
		d.storeFailed(ctx, "promote due jobs", err)
	}
	return n, next
}

func promoteAll(ctx context.Context, s *headgate.Store) (int, time.Time, error) {
	const limit = 1000
	total := 0
	for {
		n, next, err := s.PromoteDue(ctx, limit)
		total += n
		if err != nil || n < limit {
			return total, next, err
		}
	}
}

func (d *drainer) stats(ctx context.Context) []headgate.QueueStats {
	d.t.Helper()
	stats, err := d.store.QueueStats(ctx)
	if err != nil {
		d.storeFailed(ctx, "read queue stats", err)
	}
	return stats
}

// storeFailed fails the test for a store call that failed: as a Drain out of time when
// its context is done, else with the store's error.
func (d *drainer) storeFailed(ctx context.Context, what string, err error) {
	d.t.Helper()
	if ctx.Err() != nil {
		d.failBusy(ctx.Err(), cmp.Or(d.opts.Timeout, DrainTimeoutDefault))
	}
	fatalf(d.t, "rqueuetest: Drain: %s: %v", what, err)
}

// addQueues adds the queues with available work that Drain does not serve yet, and
// reports whether there were any.
func (d *drainer) addQueues(stats []headgate.QueueStats) bool {
	added := false
	for _, st := range stats {
		if st.Counts[headgate.StateAvailable] > 0 && !slices.Contains(d.queues, st.Queue) {
			d.queues = append(d.queues, st.Queue)
			added = true
		}
	}
	return added
}

// available counts the available jobs of the queues served that are not paused.
func (d *drainer) available(stats []headgate.QueueStats) int {
	n := 0
	for _, st := range stats {
		if !st.Paused && d.serves(st.Queue) {
			n += int(st.Counts[headgate.StateAvailable])
		}
	}
	return n
}

func (d *drainer) serves(queue string) bool {
	return d.queues == nil || slices.Contains(d.queues, queue)
}

// failWork fails the test for a Work call that returned an error.
func (d *drainer) failWork(ctx context.Context, err error, timeout time.Duration) {
	d.t.Helper()
	switch {
	case ctx.Err() != nil:
		d.failBusy(ctx.Err(), timeout)
	case errors.Is(err, worker.ErrAlreadyStarted):
		fatalf(d.t, "rqueuetest: Drain: worker %s was started: Drain runs jobs with Worker.Work, which takes a worker "+
			"that is never started", d.w.ID())
	}
	fatalf(d.t, "rqueuetest: Drain: %v", err)
}

// failBusy fails the test for a Drain that could not finish.
func (d *drainer) failBusy(err error, timeout time.Duration) {
	d.t.Helper()
	if errors.Is(err, errOverLimit) {
		runs := make([]*jobRuns, 0, len(d.runs))
		for _, r := range d.runs {
			runs = append(runs, r)
		}
		slices.SortFunc(runs, func(a, b *jobRuns) int { return cmp.Or(b.n-a.n, strings.Compare(a.id, b.id)) })
		var b strings.Builder
		fmt.Fprintf(&b, "rqueuetest: Drain: stopped after %d attempts (DrainOpts.MaxAttempts); a handler that always "+
			"snoozes or retries never drains while AdvanceToDue steps the clock. The jobs that ran most:", d.res.Attempts)
		for _, r := range runs[:min(len(runs), maxListed)] {
			fmt.Fprintf(&b, "\n    id=%s kind=%q ran %d %s, last outcome %s", r.id, r.kind, r.n, plural(r.n, "time", "times"), r.last)
			if r.err != nil {
				fmt.Fprintf(&b, " (%s)", oneLine(r.err.Error()))
			}
		}
		fatalf(d.t, "%s", b.String())
	}
	served := fmt.Sprintf("the queues %q", d.queues)
	if d.queues == nil {
		served = "the worker's queues"
	}
	var why string
	if errors.Is(err, context.DeadlineExceeded) {
		why = fmt.Sprintf("%s were not drained within %s (DrainOpts.Timeout, or the context's deadline)", served, humandur.String(timeout))
	} else {
		why = fmt.Sprintf("the context was cancelled before %s were drained", served)
	}
	ctx, cancel := opContext()
	defer cancel()
	jobs, lerr := listJobs(ctx, d.store)
	var left []*headgate.Job
	for _, j := range jobs {
		if d.serves(j.Queue) && (j.State == headgate.StateAvailable || j.State == headgate.StateRunning) {
			left = append(left, j)
		}
	}
	n := d.res.Attempts
	var b strings.Builder
	fmt.Fprintf(&b, "rqueuetest: Drain: %s; worker %s ran %d %s", why, d.w.ID(), n, plural(n, "attempt", "attempts"))
	if lerr != nil {
		fmt.Fprintf(&b, "\n  cannot list the jobs left: %v", lerr)
	} else {
		fmt.Fprintf(&b, "\n  %d %s left available or running (handlers still running at the end were handed back):",
			len(left), plural(len(left), "job is", "jobs are"))
		writeJobs(&b, left, nil)
	}
	fatalf(d.t, "%s", b.String())
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return truncate(s, 200)
}

package rqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/headgate/headgate"
)

// maxCoalesced bounds the jobs of concurrent Enqueue calls that go out in one script
// call: a bigger batch holds Redis (and the callers that wait for it) longer.
const maxCoalesced = 128

// A second script call goes out beside the one in flight, on a connection of its own,
// only once pipelineAt jobs wait for it: fewer are sent together when the call in flight
// returns. Redis time, not the round trip, bounds a loaded client: each script call costs
// about as much Redis time as three jobs in a batch, so splitting a handful of waiting
// jobs over two calls costs more than it saves (measured on 2 cores with 8 producers: 0.7x
// the rate with two calls in flight). From pipelineAt jobs on, the per-call cost is a
// small part of the batch, and Redis no longer waits for the round trip between batches.
const (
	maxInFlight = 2
	pipelineAt  = 16
)

// coalescer sends the single jobs of concurrent Enqueue calls together. A call that finds
// no script call in flight goes out at once, alone, with its own context; calls that
// arrive while one is in flight wait and go out as one batch when it returns, or at once
// in a second call beside it when pipelineAt of them wait. So a lone caller waits for
// nothing more than before, and overlapping callers share the per-call cost of the
// script, which is most of a single job's Redis time.
//
// The store writes a batch all or nothing, so each job's outcome is kept its own: a batch
// holds at most one job with a unique key (a duplicate is then known to be that job's) and
// no two jobs with the same id, and a batch refused by one job's error is sent again
// without that job, or job by job when the error does not name one job.
type coalescer struct {
	send EnqueueFunc // the store's enqueue, after the middleware

	mu       sync.Mutex
	inFlight int // script calls of the coalescer's in flight, at most maxInFlight
	waiting  []*waitingJob
}

// waitingJob is a job of an Enqueue call that waits for a batch.
type waitingJob struct {
	ctx  context.Context
	env  headgate.Envelope
	sent bool                     // taken into a batch; under coalescer.mu
	done chan struct{}            // closed when res and err are set
	res  []headgate.EnqueueResult // the job's result, alone in a slice, or nil
	err  error
}

// enqueue stores the one job of envs, alone or in a batch with jobs of concurrent calls,
// and returns its result alone in a slice (nil on an error that comes without results).
//
// A caller whose context ends while its job waits gets the context's error at once, and
// the job is never sent. One whose context ends while its batch is being written gets the
// context's error at once too; the job may then have been written, as with any call cut
// off mid-way, and enqueueing it again with the same id tells.
func (c *coalescer) enqueue(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
	c.mu.Lock()
	if c.inFlight == 0 {
		c.inFlight = 1
		c.mu.Unlock()
		res, err := c.send(ctx, envs)
		c.next()
		return res, err
	}
	w := &waitingJob{ctx: ctx, env: envs[0], done: make(chan struct{})}
	c.waiting = append(c.waiting, w)
	if len(c.waiting) >= pipelineAt && c.inFlight < maxInFlight {
		c.inFlight++
		go c.sendUntilNoneWait(c.takeLocked())
	}
	c.mu.Unlock()

	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-w.done: // finished as the context ended: the outcome is known
		return w.res, w.err
	default:
	}
	if !w.sent {
		for i, o := range c.waiting {
			if o == w {
				c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
				break
			}
		}
		return nil, fmt.Errorf("context ended before the job was sent, nothing was written: %w", context.Cause(ctx))
	}
	return nil, fmt.Errorf("context ended while the job was being written; it may have been written: %w", context.Cause(ctx))
}

// next is called as a script call returns: it hands the jobs that waited meanwhile to a
// goroutine that sends them in the call's place, batch after batch, until none wait; with
// none waiting, the place is free and the next call goes out at once.
func (c *coalescer) next() {
	if batch := c.take(); batch != nil {
		go c.sendUntilNoneWait(batch)
	}
}

// sendUntilNoneWait sends batch, then the next ones, in one place among the calls in
// flight, until take frees the place.
func (c *coalescer) sendUntilNoneWait(batch []*waitingJob) {
	for batch != nil {
		c.sendBatch(batch)
		// The callers just answered are runnable now; letting them run first lets
		// those that enqueue again join the next batch instead of waiting behind it
		// (at 8 producers about 7 jobs a call instead of 4, so less Redis and client
		// CPU per job). With nothing else runnable it returns at once.
		runtime.Gosched()
		batch = c.take()
	}
}

// take removes the next batch from the waiting jobs for a call whose place it is, or
// frees the place and returns nil: when none wait, or when another call is in flight and
// fewer than pipelineAt wait, which then go out with that call's next batch. So waiting
// jobs always have a call in flight that will take them.
func (c *coalescer) take() []*waitingJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 || (c.inFlight > 1 && len(c.waiting) < pipelineAt) {
		c.inFlight--
		return nil
	}
	return c.takeLocked()
}

// takeLocked removes the next batch from the waiting jobs, which are not none; c.mu is
// held. Jobs that cannot share the batch (a second unique key, a repeated id) stay for a
// later one, in their order.
func (c *coalescer) takeLocked() []*waitingJob {
	var batch []*waitingJob
	ids := make(map[string]bool)
	unique := false
	rest := c.waiting[:0]
	for _, w := range c.waiting {
		if len(batch) == maxCoalesced || ids[w.env.ID] || (unique && w.env.UniqueKey != "") {
			rest = append(rest, w)
			continue
		}
		ids[w.env.ID] = true
		unique = unique || w.env.UniqueKey != ""
		w.sent = true
		batch = append(batch, w)
	}
	clear(c.waiting[len(rest):])
	c.waiting = rest
	return batch
}

// sendBatch writes batch and gives every job its outcome. The callers' contexts may end
// on their own, so the batch goes out with the values of its first job's context but
// none's cancellation; the Redis client's timeouts bound it.
func (c *coalescer) sendBatch(batch []*waitingJob) {
	ctx := context.WithoutCancel(batch[0].ctx)
	for len(batch) > 0 {
		envs := make([]headgate.Envelope, len(batch))
		for i, w := range batch {
			envs[i] = w.env
		}
		res, err := c.send(ctx, envs)
		if err == nil || res != nil { // written (a NotDurableError comes with results)
			for i, w := range batch {
				w.finish(res[i:i+1:i+1], err)
			}
			return
		}
		i, jobErr, ok := refusedBy(envs, err)
		switch {
		case ok && replacing(err, envs[i]) && len(batch) > 1:
			// A batch refused by a duplicate wrote nothing, not even the duplicate's
			// replacement: alone, the job gets the replacement it would have had.
			res, err := c.send(ctx, envs[i:i+1:i+1])
			batch[i].finish(res, err)
			batch = append(batch[:i], batch[i+1:]...)
		case ok:
			batch[i].finish(nil, jobErr)
			batch = append(batch[:i], batch[i+1:]...)
		case nothingWritten(err):
			// Refused for a reason that may hold for some jobs and not others (a queue
			// that has room for some, a quarantined fingerprint that replays pass):
			// each job alone gets the answer it would have had.
			for i, w := range batch {
				res, err := c.send(ctx, envs[i:i+1:i+1])
				w.finish(res, err)
			}
			return
		default: // a Redis error: every job's outcome is as unknown as the call's
			for _, w := range batch {
				w.finish(nil, err)
			}
			return
		}
	}
}

func (w *waitingJob) finish(res []headgate.EnqueueResult, err error) {
	w.res, w.err = res, err
	close(w.done)
}

// refusedBy finds the one job of a refused batch that err is about, and the error that job
// alone would have got: an invalid field (named jobs[i]), a taken id, or a held unique key
// (a batch has at most one unique job).
func refusedBy(envs []headgate.Envelope, err error) (int, error, bool) {
	var inv *headgate.InvalidError
	if errors.As(err, &inv) {
		var i int
		if n, _ := fmt.Sscanf(inv.Field, "jobs[%d]", &i); n == 1 && i >= 0 && i < len(envs) {
			_, rest, _ := strings.Cut(inv.Field, "]")
			return i, &headgate.InvalidError{Field: "jobs[0]" + rest, Reason: inv.Reason}, true
		}
		return 0, nil, false
	}
	var conflict *headgate.IDConflictError
	if errors.As(err, &conflict) {
		for i, e := range envs {
			if e.ID == conflict.JobID {
				return i, err, true
			}
		}
		return 0, nil, false
	}
	var dup *headgate.DuplicateError
	if errors.As(err, &dup) {
		for i, e := range envs {
			if e.UniqueKey != "" {
				return i, err, true
			}
		}
	}
	return 0, nil, false
}

// replacing reports whether err is a duplicate of env and env would replace its holder
// (a replace mask or a debounce), which only a call of env alone does.
func replacing(err error, env headgate.Envelope) bool {
	var dup *headgate.DuplicateError
	return errors.As(err, &dup) && (env.UniqueReplace != 0 || env.UniqueDebounce > 0)
}

// nothingWritten reports whether err is a refusal that wrote nothing, so the batch's jobs
// can be sent again.
func nothingWritten(err error) bool {
	var (
		inv *headgate.InvalidError
		q   *headgate.QuarantinedError
		bp  *headgate.BackpressureError
		cor *headgate.CorruptError
	)
	return errors.As(err, &inv) || errors.As(err, &q) || errors.As(err, &bp) || errors.As(err, &cor)
}

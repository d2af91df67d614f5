package worker

import (
	"errors"
	"time"

	"github.com/headgate/headgate"
)

const (
	// ackWindow is the longest a finished job waits for others to share its ack's round
	// trip. The batch goes out sooner when no job is running any more or it is full.
	ackWindow = time.Millisecond
	// maxAckBatch is the most acks sent in one round trip.
	maxAckBatch = 1000
)

// ackLoop batches the acks of finished attempts and sends each batch with one AckMany.
// A batch is flushed when no job is running, when it is ackWindow old, or when it is
// full. When Redis fails, the batch is retried with backoff, each ack for as long as its
// lease lasts; later acks join it.
func (w *Worker) ackLoop() {
	var (
		batch []*execution
		bo    backoff
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer func() { w.drop(batch) }()
	for {
		if len(batch) == 0 {
			select {
			case e := <-w.finished:
				batch = append(batch, e)
			case <-w.dead:
				return
			}
		}
		deadline := time.Now().Add(ackWindow)
	gather:
		for len(batch) < maxAckBatch {
			select {
			case e := <-w.finished:
				batch = append(batch, e)
				continue
			default:
			}
			wait := time.Until(deadline)
			if w.running.load() == 0 || w.stopping.Load() || wait <= 0 {
				break
			}
			timer.Reset(wait)
			select {
			case e := <-w.finished:
				batch = append(batch, e)
			case <-w.idleAck:
			case <-timer.C:
				break gather
			case <-w.dead:
				timer.Stop()
				return
			}
			timer.Stop()
		}
		batch = w.flush(batch)
		if len(batch) == 0 {
			bo.reset()
			continue
		}
		timer.Reset(bo.next())
		select {
		case <-timer.C:
		case <-w.outageEnds():
			timer.Stop()
		case <-w.dead:
			timer.Stop()
			return
		}
	}
}

// flush sends a batch of acks and settles them. On a Redis failure it returns the acks
// to retry: those whose lease still lasts.
func (w *Worker) flush(batch []*execution) []*execution {
	if w.killed.Load() {
		w.drop(batch)
		return nil
	}
	reqs := make([]headgate.AckRequest, len(batch))
	for i, e := range batch {
		reqs[i] = e.ackRequest()
	}
	res, err := w.store.AckMany(w.ioCtx, reqs)
	var invalid *headgate.InvalidError
	switch {
	case err == nil:
		w.redisAnswered()
		for i, e := range batch {
			w.acked(e, res[i])
		}
		return nil
	case errors.As(err, &invalid):
		// A bug, not an outage: ack one at a time so one bad ack holds up no other.
		w.log.Error("ack batch refused; acking one at a time", "error", err)
		for i, e := range batch {
			w.ackAlone(e, reqs[i])
		}
		return nil
	}
	now := time.Now()
	keep := batch[:0]
	for _, e := range batch {
		if e.expired(now) || w.ioCtx.Err() != nil {
			w.log.Warn("giving up an ack: the lease ran out while Redis was unreachable; the job will be reclaimed",
				"job", e.lease.JobID, "outcome", e.outcome.String(), "error", err)
			w.settle(e)
			continue
		}
		keep = append(keep, e)
	}
	if len(keep) > 0 {
		w.redisFailed("ack failed; retrying", err, "jobs", len(keep))
	}
	return keep
}

// ackAlone acks one execution by itself; an ack the store still refuses as invalid is
// sent as a retry carrying the reason, so the job is not left running.
func (w *Worker) ackAlone(e *execution, req headgate.AckRequest) {
	res, err := w.store.AckMany(w.ioCtx, []headgate.AckRequest{req})
	var invalid *headgate.InvalidError
	if errors.As(err, &invalid) {
		req = headgate.AckRequest{Lease: e.lease, Outcome: headgate.OutcomeRetry,
			Opts: &headgate.AckOpts{Error: truncate("worker: the store refused the ack: " + err.Error())}}
		res, err = w.store.AckMany(w.ioCtx, []headgate.AckRequest{req})
	}
	if err != nil {
		w.log.Error("ack failed; the job will be reclaimed when its lease expires", "job", e.lease.JobID, "error", err)
		w.settle(e)
		return
	}
	w.acked(e, res[0])
}

// acked settles an execution the store answered for.
func (w *Worker) acked(e *execution, r headgate.AckResult) {
	var rejected *headgate.LeaseRejectedError
	switch {
	case errors.As(r.Err, &rejected):
		w.log.Warn("ack rejected: the job's lease is no longer held (cancelled, reclaimed or deleted)",
			"job", e.lease.JobID, "outcome", e.outcome.String())
	case r.Err != nil:
		w.log.Error("ack failed", "job", e.lease.JobID, "outcome", e.outcome.String(), "error", r.Err)
	case r.State == headgate.StateScheduled || r.State == headgate.StateRetryable:
		notify(w.nudge)
	}
	w.settle(e)
	if w.onAck != nil {
		w.onAck(e.lease.JobID, e.outcome, r.State, r.Err)
	}
}

// drop settles acks that will never be sent (the worker was killed or torn down).
func (w *Worker) drop(batch []*execution) {
	for _, e := range batch {
		w.settle(e)
	}
	for {
		select {
		case e := <-w.finished:
			w.settle(e)
		default:
			return
		}
	}
}

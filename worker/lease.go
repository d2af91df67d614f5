package worker

import (
	"slices"
	"time"

	"github.com/headgate/headgate"
)

// maxRenewBatch is the most leases renewed by one store call.
const maxRenewBatch = 1000

// renewLoop renews every lease the worker holds each Lease/3, in one store call, and
// cancels the handlers of the leases it lost. When Redis fails it retries with backoff
// (never later than the next period), and cancels the handlers whose leases ran out by
// the worker's clock meanwhile: another worker may have their jobs by now.
func (w *Worker) renewLoop() {
	p := newPacer(w.cfg.Lease/3, w.cfg.Lease/3)
	defer p.stop()
	for p.wait(w.dead) {
		switch called, err := w.renew(); {
		case err == nil:
			if called {
				w.redisAnswered()
			}
			p.succeeded()
		case w.ioCtx.Err() != nil:
			return
		default:
			p.failed(w, "lease renewal failed; retrying", err)
			w.expireLocally(time.Now())
		}
	}
}

// renew extends the leases held and handles the lost ones. It reports whether it asked
// Redis (not when no lease is held).
func (w *Worker) renew() (called bool, err error) {
	held := w.heldSnapshot()
	for len(held) > 0 {
		chunk := held[:min(len(held), maxRenewBatch)]
		held = held[len(chunk):]
		refs := make([]headgate.LeaseRef, 0, len(chunk))
		for _, e := range chunk {
			if e.state.Load() == stateHandedBack {
				continue // its hand-back is on the way; nothing to keep
			}
			refs = append(refs, e.lease)
		}
		t0 := time.Now()
		lost, err := w.store.Renew(w.ioCtx, refs, w.cfg.Lease)
		called = true
		if err != nil {
			return called, err
		}
		lostIDs := make(map[string]bool, len(lost))
		for _, id := range lost {
			lostIDs[id] = true
		}
		deadline := t0.Add(w.cfg.Lease).UnixNano()
		byID := make(map[string][]*execution, len(lost))
		for _, e := range chunk {
			if lostIDs[e.lease.JobID] {
				byID[e.lease.JobID] = append(byID[e.lease.JobID], e)
				continue
			}
			e.deadline.Store(deadline)
		}
		for id, es := range byID {
			// A lease is reported lost too when its ack landed during the renewal: with no
			// handler of the job still running there is nothing to cancel, nor a cause to
			// read for it.
			if slices.ContainsFunc(es, func(e *execution) bool { return e.state.Load() == stateRunning }) {
				w.lostAll(es, w.lostCause(id))
			}
		}
	}
	return called, nil
}

// lostAll handles a job id the store reported lost. Renew names jobs, not leases, so when
// the worker holds two admissions of one job (the first was reclaimed while its handler
// ignored cancellation, and the job came back here), only the older ones are known lost;
// the newest keeps its lease and the next renewal tells.
func (w *Worker) lostAll(es []*execution, cause error) {
	newest := es[0]
	for _, e := range es[1:] {
		if e.lease.Fence > newest.lease.Fence {
			newest = e
		}
	}
	for _, e := range es {
		if e != newest || len(es) == 1 {
			if cause == ErrCancelled {
				w.lose(e, cause, "job cancelled by an operator")
			} else {
				w.lose(e, cause, "lease lost: the lease expired and was reclaimed, or the job was deleted")
			}
		}
	}
}

// lostCause tells why the store no longer has a job's lease: ErrCancelled when an
// operator cancelled it (a renewal finds out when the cancel channel's push was missed),
// else ErrLeaseLost. Only lost leases pay this read.
func (w *Worker) lostCause(id string) error {
	j, err := w.store.GetJob(w.ioCtx, id)
	if err == nil && j.State == headgate.StateCancelled {
		return ErrCancelled
	}
	return ErrLeaseLost
}

// lose cancels a running handler whose lease is gone, with cause; whatever it returns is
// dropped. An attempt that already finished keeps its place in the ack queue: the store
// will reject the ack, which the acker logs.
func (w *Worker) lose(e *execution, cause error, why string) {
	if !e.state.CompareAndSwap(stateRunning, stateLost) {
		return
	}
	env := &e.claim.Envelope
	attrs := []any{"job_id", env.ID, "kind", env.Kind, "queue", env.Queue, "partition", env.PartitionKey,
		"attempt", env.Attempt + 1, "fence", e.lease.Fence}
	if cause == ErrCancelled {
		w.log.Info(why+"; cancelling its handler", attrs...)
	} else {
		w.log.Warn(why+"; cancelling its handler", attrs...)
	}
	e.cancel(cause)
	w.settle(e)
}

// expireLocally cancels the handlers whose leases ran out by the worker's clock while
// renewals failed.
func (w *Worker) expireLocally(now time.Time) {
	for _, e := range w.heldSnapshot() {
		if e.expired(now) {
			w.lose(e, ErrLeaseLost, "lease ran out while Redis was unreachable")
		}
	}
}

package worker

import (
	"context"
	"errors"
	"time"

	"github.com/headgate/headgate"
)

// Names of the maintenance duties; one worker of the fleet holds each.
const (
	DutyReclaim = "reclaim" // expired leases → retryable or quarantined
	DutyPromote = "promote" // due scheduled and retryable jobs → available
	DutyEvict   = "evict"   // finished jobs past their retention → deleted
	DutyTimers  = "timers"  // due durable workflow timers → fired, their workflows' next tasks enqueued
	DutyCron    = "cron"    // due ticks of the namespace's schedules → jobs
	DutySeries  = "series"  // every queue's outcome counters → its throughput series, once a minute
)

// maintenanceBatch is the most jobs one maintenance call handles; a full batch is
// followed by another at once.
const maintenanceBatch = 1000

// duty is a maintenance loop that runs only while its worker holds the duty's lease.
type duty struct {
	name string
	// pass runs once, under the tenure whose fence it is given, and returns how long to
	// sleep before the next pass.
	pass func(ctx context.Context, fence int64) (time.Duration, error)
	// nudge, when set, ends the sleep early.
	nudge <-chan struct{}
}

func (w *Worker) duties() []duty {
	return []duty{
		{name: DutyReclaim, pass: w.reclaimPass},
		{name: DutyPromote, pass: w.promotePass, nudge: w.nudge},
		{name: DutyEvict, pass: w.evictPass},
		{name: DutyTimers, pass: w.timersPass, nudge: w.timerNudge},
		{name: DutyCron, pass: w.cronPass},
		{name: DutySeries, pass: w.seriesPass},
	}
}

// dutyLoop claims the duty, renewing it every DutyLease/3 while it runs passes, and
// retries the claim every DutyLease/5 while another worker holds it. It gives the duty
// up when it stops, so another worker takes over at once.
func (w *Worker) dutyLoop(ctx context.Context, d duty) {
	var (
		held      bool
		fence     int64
		renewedAt time.Time
		bo        backoff
	)
	defer func() {
		if held && !w.killed.Load() {
			rctx, cancel := context.WithTimeout(w.ioCtx, time.Second)
			defer cancel()
			if err := w.store.ReleaseDuty(rctx, d.name, w.cfg.ID); err != nil {
				w.log.Warn("releasing duty failed; it passes on when its lease expires", "duty", d.name, "error", err)
			}
		}
	}()
	for ctx.Err() == nil {
		if !held || time.Since(renewedAt) >= w.cfg.DutyLease/3 {
			t0 := time.Now()
			l, err := w.store.ClaimDutyLease(w.ioCtx, d.name, w.cfg.ID, w.cfg.DutyLease)
			if err != nil {
				held = false
				if ctx.Err() != nil {
					return
				}
				wait := bo.next()
				backoffSleep(ctx, wait, w.redisFailed("claiming duty failed; retrying", err, "duty", d.name, "retry_in", wait))
				continue
			}
			w.redisAnswered()
			if l.Held && !held {
				w.log.Debug("took duty", "duty", d.name, "fence", l.Fence)
			}
			held, fence = l.Held, l.Fence
			if l.Held {
				renewedAt = t0
			}
		}
		if !held {
			sleepCtx(ctx, w.cfg.DutyLease/5)
			continue
		}
		wait, err := d.pass(ctx, fence)
		if w.onDutyPass != nil {
			w.onDutyPass(d.name, err)
		}
		var recovered <-chan struct{}
		if errors.Is(err, headgate.ErrDutyLost) {
			// The lease ran out between renewals (or the store clock jumped): claim again.
			held = false
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = bo.next()
			recovered = w.redisFailed("maintenance failed; retrying", err, "duty", d.name, "retry_in", wait)
		} else {
			bo.reset()
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.nudge: // nil for duties that take no nudge: never ready
		case <-recovered: // nil unless in an outage's backoff
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// reclaimPass applies LeaseLost to expired leases: a dead worker's jobs become retryable
// (or quarantined at the crash limit).
func (w *Worker) reclaimPass(ctx context.Context, _ int64) (time.Duration, error) {
	rs, err := w.store.ReclaimExpired(ctx, maintenanceBatch)
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		w.logReclaimed(ctx, r)
	}
	if len(rs) > 0 {
		notify(w.nudge)
	}
	if len(rs) == maintenanceBatch {
		return 0, nil
	}
	return w.cfg.ReclaimInterval, nil
}

// promotePass makes due jobs available and sleeps until the next due time, at most
// PromoteInterval.
func (w *Worker) promotePass(ctx context.Context, _ int64) (time.Duration, error) {
	n, next, err := w.store.PromoteDue(ctx, maintenanceBatch)
	if err != nil {
		return 0, err
	}
	if n == maintenanceBatch {
		return 0, nil
	}
	return w.untilDue(ctx, next, w.cfg.PromoteInterval)
}

// untilDue is how long a duty sleeps for its next due time (zero: none known) on the
// store clock, at most most.
func (w *Worker) untilDue(ctx context.Context, next time.Time, most time.Duration) (time.Duration, error) {
	if next.IsZero() {
		return most, nil
	}
	now, err := w.store.Now(ctx)
	if err != nil {
		return 0, err
	}
	return min(most, max(next.Sub(now), time.Millisecond)), nil
}

// evictPass deletes finished jobs whose retention lapsed.
func (w *Worker) evictPass(ctx context.Context, _ int64) (time.Duration, error) {
	n, err := w.store.EvictRetained(ctx, maintenanceBatch)
	if err != nil {
		return 0, err
	}
	if n == maintenanceBatch {
		return 0, nil
	}
	return w.cfg.EvictInterval, nil
}

// timersPass fires due workflow timers and sleeps until the next fire time on the store
// clock, at most PromoteInterval. A timer armed meanwhile that fires sooner ends the
// sleep: the arming script announces it on the timers-armed channel (subscribeCancels),
// and a handler of this worker that armed one nudges the duty at once.
func (w *Worker) timersPass(ctx context.Context, _ int64) (time.Duration, error) {
	n, next, err := w.store.FireTimers(ctx, maintenanceBatch)
	if err != nil {
		return 0, err
	}
	if n == maintenanceBatch {
		return 0, nil
	}
	return w.untilDue(ctx, next, w.cfg.PromoteInterval)
}

// NudgeTimers ends the timers duty's sleep, when this worker holds it, so that a timer
// armed by one of its handlers is looked at now instead of at the end of the sleep.
func NudgeTimers(w *Worker) { notify(w.timerNudge) }

// seriesPass snapshots every queue's outcome counters into its throughput series (the
// dashboard's chart of the last hour), once a minute: one script call, whatever the load.
func (w *Worker) seriesPass(ctx context.Context, _ int64) (time.Duration, error) {
	if _, err := w.store.RecordSeries(ctx, headgate.SeriesGapDefault); err != nil {
		return 0, err
	}
	return headgate.SeriesGapDefault, nil
}

package worker

import (
	"context"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// subscribeCancels subscribes to the namespace's cancel channel and its timers-armed
// channel, on a connection of its own, and returns once Redis confirmed the
// subscriptions: a cancel published after Start returned reaches the worker.
//
// A push rather than a faster renewal: an operator's cancel reaches the handler within a
// round trip, and an idle fleet sends Redis nothing more for it. The channel is one per
// namespace, not per worker, so the cancel script needs no record of which worker holds a
// job; every worker hears every cancel of its namespace and ignores the leases it does
// not hold (cancels are operator actions, rare next to jobs). Pub/sub is not stored, so
// a worker that was disconnected when a cancel was published learns of it at its next
// renewal instead, with the same cause.
//
// The timers-armed channel wakes the timers duty when any process arms a timer sooner
// than the duty's sleep (a missed message costs at most PromoteInterval of lateness).
func (w *Worker) subscribeCancels(ctx context.Context) (*redis.PubSub, error) {
	ps := w.rdb.Subscribe(ctx, w.store.CancelledChannel(), w.store.TimersArmedChannel())
	for range 2 {
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return nil, err
		}
	}
	return ps, nil
}

// cancelLoop cancels the handlers of the jobs an operator cancelled, as the cancel
// script announces them, and wakes the timers duty for a timer armed sooner, until
// teardown.
func (w *Worker) cancelLoop(ps *redis.PubSub) {
	msgs := ps.Channel()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			if m.Channel == w.store.TimersArmedChannel() {
				notify(w.timerNudge)
				continue
			}
			ref, err := headgate.ParseCancelled(m.Payload)
			if err != nil {
				w.log.Warn("ignoring a message on the cancel channel", "error", err)
				continue
			}
			w.cancelHeld(ref)
		case <-w.dead:
			return
		}
	}
}

// cancelHeld cancels the handler of the lease an operator cancelled, when the worker
// holds it; whatever the handler returns is dropped.
func (w *Worker) cancelHeld(ref headgate.LeaseRef) {
	w.heldMu.Lock()
	e := w.held[ref]
	w.heldMu.Unlock()
	if e == nil {
		return
	}
	w.lose(e, ErrCancelled, "job cancelled by an operator")
}

package worker

import (
	"context"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/headgate/headgate"
)

// heartbeatMisses is how many beats in a row a worker may miss and still count as live.
const heartbeatMisses = 3

// heartbeatLoop writes the worker's heartbeat every HeartbeatInterval, retrying sooner
// after a failure, and a last one when the worker stops (not when it is killed, as a
// crash would not), which lists it as stopped at once.
func (w *Worker) heartbeatLoop() {
	var started time.Time // store time of the first beat
	host, _ := os.Hostname()
	beat := func(ctx context.Context, liveness time.Duration) error {
		if started.IsZero() {
			now, err := w.store.Now(ctx)
			if err != nil {
				return err
			}
			started = now
		}
		w.mu.Lock()
		kinds := slices.Sorted(maps.Keys(w.handlers))
		w.mu.Unlock()
		_, err := w.store.Heartbeat(ctx, headgate.Heartbeat{ID: w.cfg.ID, Host: host, PID: os.Getpid(),
			Queues: w.cfg.Queues, Kinds: kinds, Concurrency: w.cfg.Concurrency, InFlight: int(w.running.load()),
			Started: started, Liveness: liveness})
		return err
	}
	p := newPacer(0, w.cfg.HeartbeatInterval)
	defer p.stop()
	for p.wait(w.dead) {
		switch err := beat(w.ioCtx, heartbeatMisses*w.cfg.HeartbeatInterval); {
		case err == nil:
			w.redisAnswered()
			p.succeeded()
		case w.ioCtx.Err() != nil:
			p.later() // a beat cut short by the teardown is followed by the last one
		default:
			p.failed(w, "heartbeat failed; retrying", err)
		}
	}
	if !w.killed.Load() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ioCtx), time.Second)
		defer cancel()
		if err := beat(ctx, 0); err != nil {
			w.log.Debug("last heartbeat failed; the worker stops counting as live when its liveness ends", "error", err)
		}
	}
}

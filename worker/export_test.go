package worker

import (
	"context"
	"time"

	"github.com/headgate/headgate"
)

// Kill stops w the way a crash does: no acks, no hand-backs, no duty release.
func Kill(w *Worker) { w.kill() }

// Goroutines counts w's own goroutines that are still running.
func Goroutines(w *Worker) int64 { return w.goroutines.Load() }

// OnAck makes w call fn with every ack the store answered; set it before Start.
func OnAck(w *Worker, fn func(jobID string, o headgate.Outcome, st headgate.State, err error)) {
	w.onAck = fn
}

// OnDutyPass makes w call fn after each pass of a duty it holds; set it before Start.
func OnDutyPass(w *Worker, fn func(duty string, err error)) { w.onDutyPass = fn }

// DropCancelChannel closes w's subscription to the cancel channel, as a lost connection
// would, so that cancels reach w only through its renewals.
func DropCancelChannel(w *Worker) { _ = w.cancels.Close() }

// SetOutageProbe replaces the period and the call of w's outage probe; set it before the
// first failure.
func SetOutageProbe(w *Worker, every time.Duration, ping func(context.Context) error) {
	w.probeEvery, w.pingRedis = every, ping
}

// FailCall reports a failed store call as w's loops do and returns the channel a loop
// waiting out its backoff waits on.
func FailCall(w *Worker, err error) <-chan struct{} { return w.redisFailed("test call failed", err) }

// BackoffSleep is the wait of a loop in backoff.
func BackoffSleep(ctx context.Context, d time.Duration, over <-chan struct{}) {
	backoffSleep(ctx, d, over)
}

// Outcome is outcome, for the tests of what it costs.
func Outcome(err error) headgate.Outcome { o, _ := outcome(err, false, 0); return o }

package worker

import (
	"math/rand/v2"
	"time"
)

// Bounds of the backoff after Redis failures.
const (
	backoffMin = 50 * time.Millisecond
	backoffMax = 5 * time.Second
)

// backoff is exponential with jitter, from backoffMin to backoffMax: a fleet that lost
// Redis neither spins nor comes back in lockstep. The zero value is ready to use.
type backoff struct{ failures int }

// next returns the wait before the next try: uniformly in [d/2, d) for d doubling per
// failure.
func (b *backoff) next() time.Duration {
	d := backoffMin << min(b.failures, 16)
	d = min(d, backoffMax)
	b.failures++
	return d/2 + rand.N(d/2)
}

func (b *backoff) reset() { b.failures = 0 }

// pacer paces a loop that calls Redis every period: after a failed call it retries
// sooner, with backoff (never later than the period), and at once when the outage the
// failure started or continued ends.
type pacer struct {
	period    time.Duration
	t         *time.Timer
	bo        backoff
	recovered <-chan struct{} // in an outage's backoff: closed when it ends
}

// newPacer returns a pacer whose first call is due after first.
func newPacer(first, period time.Duration) *pacer {
	return &pacer{period: period, t: time.NewTimer(first)}
}

// wait returns true when the next call is due, false when dead is closed first.
func (p *pacer) wait(dead <-chan struct{}) bool {
	select {
	case <-p.t.C:
	case <-p.recovered:
		p.t.Stop()
		p.recovered = nil
	case <-dead:
		return false
	}
	return true
}

// failed reports a call that failed with err (Worker.redisFailed, logged as what) and
// schedules its retry.
func (p *pacer) failed(w *Worker, what string, err error) {
	next := min(p.bo.next(), p.period)
	p.recovered = w.redisFailed(what, err, "retry_in", next)
	p.t.Reset(next)
}

// succeeded schedules the next call a period on.
func (p *pacer) succeeded() {
	p.bo.reset()
	p.recovered = nil
	p.t.Reset(p.period)
}

// later schedules the next call a period on, leaving the backoff as it is.
func (p *pacer) later() { p.t.Reset(p.period) }

func (p *pacer) stop() { p.t.Stop() }

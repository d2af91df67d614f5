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

package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// outage tracks whether the worker can reach Redis, so that an outage costs the log one
// WARN when it starts and one INFO when it ends, whatever number of loops retry meanwhile
// (admission, the wait for work, acks, renewals, each duty).
type outage struct {
	mu    sync.Mutex
	down  bool
	since time.Time
	calls int // failed calls during the outage
	// ended is when the last outage ended; flap marks an outage that began within
	// outageFlap of it, which is logged as part of that one (neither WARN nor INFO)
	// unless it lasts outageFlap.
	ended time.Time
	flap  bool
	// over is closed when the outage ends, by any call that gets through or by the
	// probe: the loops waiting out a backoff retry at once, so that work resumes as soon
	// as Redis answers rather than up to backoffMax later.
	over chan struct{}
}

// probeInterval is how often the worker PINGs Redis during an outage.
const probeInterval = 250 * time.Millisecond

// outageFlap is how soon after an outage's end a failure still belongs to it: after a
// restart of Redis, go-redis's pool keeps answering some calls with its last dial error
// until its background redial succeeds (up to a second), while other loops already get
// through.
const outageFlap = time.Second

// redisFailed reports a failed store call: a Redis that does not answer starts (or
// continues) an outage, logged once; any other error is logged at ERROR as what, since it
// is a bug or a data problem rather than an outage. attrs describe the call. It returns
// a channel closed when the outage ends (nil for an error that is no outage): a loop
// waiting out its backoff waits on it too.
func (w *Worker) redisFailed(what string, err error, attrs ...any) <-chan struct{} {
	if !unreachable(err) {
		w.log.Error(what, append(attrs, "error", err)...)
		return nil
	}
	w.outage.mu.Lock()
	started := !w.outage.down
	if started {
		w.outage.down, w.outage.since, w.outage.calls = true, time.Now(), 0
		w.outage.flap = !w.outage.ended.IsZero() && time.Since(w.outage.ended) < outageFlap
		w.outage.over = make(chan struct{})
		over := w.outage.over
		w.spawn(func() { w.probe(over) }, func() {})
	}
	over := w.outage.over
	w.outage.calls++
	if w.outage.flap && time.Since(w.outage.since) >= outageFlap {
		// Not a flap after all: Redis is down again. Log it as an outage of its own.
		w.outage.flap, started = false, true
	}
	flap := w.outage.flap
	w.outage.mu.Unlock()
	if started && !flap {
		w.log.Warn("Redis is unreachable: the worker retries with backoff (up to 5s apart) and logs once more when Redis answers",
			"redis", redisAddr(w.rdb), "error", err)
	}
	w.log.Debug(what, append(attrs, "error", err)...)
	return over
}

// probe PINGs Redis every probeInterval until it answers, which ends the outage, or the
// outage ends otherwise (over), or the worker stops. A PING is cheaper than the calls the
// loops would retry, and one probe serves them all.
func (w *Worker) probe(over <-chan struct{}) {
	t := time.NewTicker(w.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-over:
			return
		case <-w.dead:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.probeEvery)
		err := w.pingRedis(ctx)
		cancel()
		if err == nil {
			w.redisAnswered()
			return
		}
	}
}

// outageEnds returns a channel closed when the current outage ends, nil when Redis
// answers.
func (w *Worker) outageEnds() <-chan struct{} {
	w.outage.mu.Lock()
	defer w.outage.mu.Unlock()
	if !w.outage.down {
		return nil
	}
	return w.outage.over
}

// backoffSleep waits d, or until ctx is done or the outage that over belongs to ends.
func backoffSleep(ctx context.Context, d time.Duration, over <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-over:
	}
}

// redisAnswered reports a store call that succeeded: it ends an outage.
func (w *Worker) redisAnswered() {
	w.outage.mu.Lock()
	if !w.outage.down {
		w.outage.mu.Unlock()
		return
	}
	w.outage.down, w.outage.ended = false, time.Now()
	close(w.outage.over)
	d, calls, flap := time.Since(w.outage.since), w.outage.calls, w.outage.flap
	w.outage.mu.Unlock()
	if flap {
		return
	}
	w.log.Info("Redis answers again: the worker resumed", "redis", redisAddr(w.rdb),
		"outage", d.Round(time.Millisecond), "failed_calls", calls)
}

// unreachable tells an error of a Redis that does not answer (refused or dropped
// connections, timeouts, a server loading its data set or a cluster without a quorum)
// from one Redis answered with.
func unreachable(err error) bool {
	var netErr net.Error
	switch {
	case err == nil:
		return false
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	for _, prefix := range []string{"LOADING", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// redisAddr names the Redis a client talks to, for messages.
func redisAddr(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	}
	return fmt.Sprintf("%T", rdb)
}

// ping waits until Redis answers a PING, retrying with backoff, for at most
// Config.StartTimeout. A Redis that refuses the client's credentials fails it at once:
// waiting does not change a password.
func (w *Worker) ping(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, w.cfg.StartTimeout)
	defer cancel()
	var bo backoff
	var last error // the last failure that was not the wait running out
	for {
		err := w.rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if parent.Err() != nil {
			// The caller gave up (a signal during start-up), not Redis.
			return w.startCancelled(parent)
		}
		if authRefused(err) {
			return fmt.Errorf("worker: Redis at %s refused the client's credentials (check the password and user "+
				"in the client's options or URL): %w", redisAddr(w.rdb), err)
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if ctx.Err() != nil {
			// The call cut by the wait's end says only that; the one before says why
			// Redis did not answer (refused, no route, a name that does not resolve).
			return fmt.Errorf("worker: Redis at %s did not answer within %s (Config.StartTimeout): %w",
				redisAddr(w.rdb), w.cfg.StartTimeout, last)
		}
		sleepCtx(ctx, bo.next())
	}
}

// authRefused reports whether Redis refused the connection's credentials: none given
// where it wants some (NOAUTH), a wrong pair (WRONGPASS), a user that may not PING
// (NOPERM), or a password given to a server without one.
func authRefused(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOPERM") ||
		(strings.HasPrefix(msg, "ERR") && strings.Contains(msg, "AUTH"))
}

// startCancelled is Start's error when its context ended before the worker started.
func (w *Worker) startCancelled(ctx context.Context) error {
	return fmt.Errorf("worker: start cancelled before the worker started (Redis at %s): %w",
		redisAddr(w.rdb), context.Cause(ctx))
}

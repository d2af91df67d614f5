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
}

// outageFlap is how soon after an outage's end a failure still belongs to it: after a
// restart of Redis, go-redis's pool keeps answering some calls with its last dial error
// until its background redial succeeds (up to a second), while other loops already get
// through.
const outageFlap = time.Second

// redisFailed reports a failed store call: a Redis that does not answer starts (or
// continues) an outage, logged once; any other error is logged at ERROR as what, since it
// is a bug or a data problem rather than an outage. attrs describe the call.
func (w *Worker) redisFailed(what string, err error, attrs ...any) {
	if !unreachable(err) {
		w.log.Error(what, append(attrs, "error", err)...)
		return
	}
	w.outage.mu.Lock()
	started := !w.outage.down
	if started {
		w.outage.down, w.outage.since, w.outage.calls = true, time.Now(), 0
		w.outage.flap = !w.outage.ended.IsZero() && time.Since(w.outage.ended) < outageFlap
	}
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
}

// redisAnswered reports a store call that succeeded: it ends an outage.
func (w *Worker) redisAnswered() {
	w.outage.mu.Lock()
	if !w.outage.down {
		w.outage.mu.Unlock()
		return
	}
	w.outage.down, w.outage.ended = false, time.Now()
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
// Config.StartTimeout.
func (w *Worker) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.StartTimeout)
	defer cancel()
	var bo backoff
	for {
		err := w.rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("worker: Redis at %s did not answer within %s (Config.StartTimeout): %w",
				redisAddr(w.rdb), w.cfg.StartTimeout, err)
		}
		sleepCtx(ctx, bo.next())
	}
}

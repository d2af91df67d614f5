package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	mustOK(t, err)
	addr := l.Addr().String()
	mustOK(t, l.Close())
	return addr
}

// A worker pointed at a Redis that does not answer fails at start, within StartTimeout,
// with an error that names the address, instead of logging errors forever.
func TestStartFailsWhenRedisDoesNotAnswer(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	const wait = 300 * time.Millisecond
	for _, name := range []string{"Start", "Run"} {
		logs := newLogCapture()
		w, err := worker.New(rdb, &worker.Config{Namespace: "unreachable", StartTimeout: wait, Logger: logs.logger()})
		mustOK(t, err)
		worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil })
		t0 := time.Now()
		if name == "Start" {
			err = w.Start(context.Background())
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			err = w.Run(ctx)
			cancel()
		}
		took := time.Since(t0)
		if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "did not answer within 300ms") {
			t.Errorf("%s = %v, want an error naming %s and the wait", name, err, addr)
		}
		if took < wait || took > wait+2*time.Second {
			t.Errorf("%s returned after %s, want about %s", name, took, wait)
		}
		if n := worker.Goroutines(w); n != 0 {
			t.Errorf("%s: %d worker goroutines after a failed start", name, n)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("Stop after a failed %s = %v, want nil", name, err)
		}
		for _, lvl := range []slog.Level{slog.LevelWarn, slog.LevelError} {
			if ls := logs.matching(lvl, ""); len(ls) != 0 {
				t.Errorf("%s logged at %s: %s", name, lvl, logs.all())
			}
		}
	}
}

// A worker whose Redis refuses its credentials fails at once, saying so, instead of
// waiting StartTimeout and reporting that Redis did not answer; a worker whose Redis is
// down names why it could not reach it (the dial's error), not the end of its own wait.
func TestStartSaysWhyRedisRefused(t *testing.T) {
	t.Parallel()
	t.Run("wrong password", func(t *testing.T) {
		srv := redistest.Start(t)
		admin := srv.Client(t)
		mustOK(t, admin.Do(context.Background(), "ACL", "SETUSER", "hg-start", "on", ">right", "~*", "&*", "+@all").Err())
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "hg-start", Password: "wrong"})
		t.Cleanup(func() { _ = rdb.Close() })
		w, err := worker.New(rdb, &worker.Config{Namespace: redistest.Namespace(t), StartTimeout: waitLimit, Logger: testLogger(t)})
		mustOK(t, err)
		worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil })
		t0 := time.Now()
		err = w.Start(context.Background())
		took := time.Since(t0)
		var rerr redis.Error
		if err == nil || !errors.As(err, &rerr) || !strings.Contains(err.Error(), "WRONGPASS") ||
			!strings.Contains(err.Error(), "credentials") || !strings.Contains(err.Error(), srv.Addr()) ||
			strings.Contains(err.Error(), "did not answer") {
			t.Errorf("Start with a wrong password = %v; want an error that names %s, says the credentials were refused and wraps WRONGPASS", err, srv.Addr())
		}
		if took > waitLimit/3 {
			t.Errorf("Start with a wrong password returned after %s; want at once, not after StartTimeout (%s)", took, waitLimit)
		}
		mustOK(t, w.Stop(context.Background()))
	})
	t.Run("redis down", func(t *testing.T) {
		// No retries inside a call, so that a PING fails with the dial's error well
		// within the wait.
		rdb := redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = rdb.Close() })
		w, err := worker.New(rdb, &worker.Config{Namespace: redistest.Namespace(t), StartTimeout: 300 * time.Millisecond, Logger: testLogger(t)})
		mustOK(t, err)
		worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil })
		err = w.Start(context.Background())
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("Start on a closed port = %v; want the dial's error (connection refused), not only the wait's end", err)
		}
		mustOK(t, w.Stop(context.Background()))
	})
}

// A start whose context ends while the worker waits for Redis (a SIGTERM during a
// deploy's start-up) says so, and does not blame Redis for a wait it did not make.
func TestStartCancelledSaysSo(t *testing.T) {
	t.Parallel()
	down := redis.NewClient(&redis.Options{Addr: closedPort(t)})
	t.Cleanup(func() { _ = down.Close() })
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
	}{{"redis answers", redistest.Miniredis(t)}, {"redis down", down}} {
		for _, call := range []string{"Start", "Run"} {
			t.Run(tc.name+"/"+call, func(t *testing.T) {
				w, err := worker.New(tc.rdb, &worker.Config{Namespace: redistest.Namespace(t), Logger: testLogger(t)})
				mustOK(t, err)
				worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil })
				ctx, cancel := context.WithCancel(context.Background())
				if tc.rdb == down {
					time.AfterFunc(50*time.Millisecond, cancel)
				} else {
					cancel()
				}
				defer cancel()
				if call == "Start" {
					err = w.Start(ctx)
				} else {
					err = w.Run(ctx)
				}
				if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "did not answer within") ||
					!strings.Contains(err.Error(), "cancelled") {
					t.Errorf("%s with a context cancelled during start = %v; want an error that says the start was cancelled and wraps context.Canceled", call, err)
				}
				if err := w.Stop(context.Background()); err != nil {
					t.Errorf("Stop after a cancelled %s = %v, want nil", call, err)
				}
			})
		}
	}
}

// During an outage every loop of the worker retries, but the log gets one WARN when it
// starts and one INFO when it ends.
func TestOutageLogsOnceEachWay(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	logs := newLogCapture()
	ns := redistest.Namespace(t)
	cfg := testConfig(t, ns)
	cfg.Logger = logs.logger()
	w, err := worker.New(rdb, &cfg)
	mustOK(t, err)
	ran := make(chan string, 10)
	worker.Handle(w, func(ctx context.Context, job *worker.Job[testArgs]) error {
		ran <- job.ID
		return nil
	})
	acked := make(chan string, 10)
	worker.OnAck(w, func(id string, _ headgate.Outcome, _ headgate.State, _ error) { acked <- id })
	mustOK(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	mustOK(t, err)
	_, err = store.Enqueue(context.Background(), headgate.Envelope{ID: "before", Kind: "test", Payload: []byte{0x80}})
	mustOK(t, err)
	recv(t, ran, "the job before the outage")
	recv(t, acked, "the ack of the job before the outage")

	mustOK(t, srv.Stop())
	logs.wait(t, 1, slog.LevelWarn, "Redis is unreachable")
	// Let several loops fail several times: admission, the wait, renewals and the duties
	// each retry on their own.
	logs.wait(t, 12, slog.LevelDebug, "failed; retrying")
	mustOK(t, srv.Restart())
	logs.wait(t, 1, slog.LevelInfo, "Redis answers again")

	// The test's client may still answer with its last dial error for up to a second
	// (go-redis's pool redials in the background after repeated failures).
	deadline := time.Now().Add(waitLimit)
	for {
		_, err = store.Enqueue(context.Background(), headgate.Envelope{ID: "after", Kind: "test", Payload: []byte{0x80}})
		if err == nil || time.Now().After(deadline) {
			break
		}
		<-time.After(50 * time.Millisecond)
	}
	mustOK(t, err)
	if id := recv(t, ran, "the job after the outage"); id != "after" {
		t.Errorf("ran %q, want after", id)
	}
	warn := logs.matching(slog.LevelWarn, "")
	info := logs.matching(slog.LevelInfo, "Redis answers again")
	if len(warn) != 1 || len(info) != 1 || len(logs.matching(slog.LevelError, "")) != 0 {
		t.Errorf("outage logged %d WARN, %d INFO and %d ERROR lines, want 1, 1 and 0:%s",
			len(warn), len(info), len(logs.matching(slog.LevelError, "")), logs.all())
	}
	if len(warn) == 1 && warn[0].Attrs["redis"] != srv.Addr() {
		t.Errorf("WARN line names redis %q, want %q", warn[0].Attrs["redis"], srv.Addr())
	}
}

// During an outage the worker PINGs Redis, and the first answer ends every loop's
// backoff at once, however long the backoff had left: work resumes as soon as Redis is
// back, not up to 5s later.
func TestOutageProbeEndsBackoff(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: closedPort(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	logs := newLogCapture()
	w, err := worker.New(rdb, &worker.Config{Namespace: "probe", Logger: logs.logger()})
	mustOK(t, err)
	pings := make(chan error) // each PING's answer, handed over when the probe sends it
	worker.SetOutageProbe(w, time.Millisecond, func(context.Context) error { return <-pings })

	over := worker.FailCall(w, io.EOF)
	if over == nil {
		t.Fatal("an unreachable Redis gave no channel to wait on")
	}
	if again := worker.FailCall(w, io.EOF); again != over {
		t.Error("a second failure of the same outage gave another channel")
	}
	woke := make(chan struct{})
	go func() {
		worker.BackoffSleep(context.Background(), time.Hour, over)
		close(woke)
	}()
	for range 3 {
		pings <- io.EOF // Redis still down: the probe keeps trying, the backoff goes on
	}
	select {
	case <-woke:
		t.Fatal("the backoff ended while Redis did not answer")
	default:
	}
	pings <- nil
	select {
	case <-woke:
	case <-time.After(waitLimit):
		t.Fatal("the backoff went on after the probe got an answer")
	}
	logs.wait(t, 1, slog.LevelInfo, "Redis answers again")
	if worker.FailCall(w, errors.New("ERR not an outage")) != nil {
		t.Error("an error Redis answered with gave a channel to wait on")
	}
}

// A worker on a namespace stored in another format fails to start with *FormatError,
// instead of starting and failing every call (admission, duties, heartbeats) for ever.
func TestStartRefusesNamespaceOfAnotherFormat(t *testing.T) {
	t.Parallel()
	rdb := redistest.Miniredis(t)
	ns := redistest.Namespace(t)
	mustOK(t, rdb.Set(context.Background(), "hg:{"+ns+"}:format", "0", 0).Err())
	w, err := worker.New(rdb, &worker.Config{Namespace: ns, Logger: testLogger(t)})
	mustOK(t, err)
	worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil })
	var fe *headgate.FormatError
	if err := w.Start(context.Background()); !errors.As(err, &fe) || fe.Found != "0" {
		t.Errorf("Start on a namespace of format 0 = %v, want *FormatError", err)
	}
	mustOK(t, w.Stop(context.Background()))
}

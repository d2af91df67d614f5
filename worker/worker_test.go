package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// waitLimit bounds every wait for an event; events take milliseconds, the margin is for
// loaded machines and the race detector.
const waitLimit = 15 * time.Second

// epoch is where each test freezes its namespace's store clock.
var epoch = time.UnixMilli(1_750_000_000_000)

// testArgs are the args of most tests' jobs.
type testArgs struct {
	Name string `msgpack:"name"`
	N    int    `msgpack:"n"`
}

func (testArgs) Kind() string { return "test" }

// ackEvent is an ack the store answered.
type ackEvent struct {
	JobID   string
	Outcome headgate.Outcome
	State   headgate.State
	Err     error
}

// testBundle is what setup gives a test: a frozen store clock in a namespace of its own,
// a worker (not started) and the acks it makes.
type testBundle struct {
	t      *testing.T
	rdb    redis.UniversalClient
	store  *headgate.Store
	worker *worker.Worker
	cfg    worker.Config
	acks   chan ackEvent
	early  map[string][]ackEvent // acks received while waiting for another job's
}

// testConfig is a worker config with short intervals, so that maintenance reacts
// within milliseconds of the test stepping the store clock.
func testConfig(t *testing.T, ns string) worker.Config {
	return worker.Config{
		Namespace:       ns,
		Concurrency:     4,
		Lease:           300 * time.Millisecond,
		ReclaimInterval: 10 * time.Millisecond,
		PromoteInterval: 10 * time.Millisecond,
		EvictInterval:   50 * time.Millisecond,
		DutyLease:       300 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
		Logger:          testLogger(t),
	}
}

// testLogger discards logs unless HEADGATE_TEST_LOG is set.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HEADGATE_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

func setup(t *testing.T, rdb redis.UniversalClient, mod func(*worker.Config)) *testBundle {
	t.Helper()
	ns := redistest.Namespace(t)
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	mustOK(t, err)
	mustOK(t, store.FreezeClock(context.Background(), epoch))
	cfg := testConfig(t, ns)
	if mod != nil {
		mod(&cfg)
	}
	return newBundle(t, rdb, store, cfg)
}

func newBundle(t *testing.T, rdb redis.UniversalClient, store *headgate.Store, cfg worker.Config) *testBundle {
	t.Helper()
	w, err := worker.New(rdb, &cfg)
	mustOK(t, err)
	b := &testBundle{t: t, rdb: rdb, store: store, worker: w, cfg: cfg, acks: make(chan ackEvent, 1000),
		early: map[string][]ackEvent{}}
	worker.OnAck(w, func(id string, o headgate.Outcome, st headgate.State, err error) {
		select {
		case b.acks <- ackEvent{id, o, st, err}:
		default:
		}
	})
	return b
}

// start starts the worker and stops it when the test ends, checking that none of its
// goroutines outlives Stop.
func (b *testBundle) start() {
	b.t.Helper()
	mustOK(b.t, b.worker.Start(context.Background()))
	b.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := b.worker.Stop(ctx); err != nil {
			b.t.Errorf("Stop: %v", err)
		}
		if n := worker.Goroutines(b.worker); n != 0 {
			b.t.Errorf("%d worker goroutines still running after Stop", n)
		}
	})
}

// handleUntilCancelled registers a handler that closes started, blocks until its context
// is cancelled, sends the cause and returns what ret returns for that context.
func (b *testBundle) handleUntilCancelled(ret func(ctx context.Context) error) (started chan struct{}, cause chan error) {
	started, cause = make(chan struct{}), make(chan error, 1)
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ret(ctx)
	})
	return started, cause
}

// handleUntilReleased registers a handler that closes started, then blocks until release
// is closed, whatever its context says, and succeeds.
func (b *testBundle) handleUntilReleased() (started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		close(started)
		<-release
		return nil
	})
	return started, release
}

// returnCtxErr is a handler's ending that reports its context's error.
func returnCtxErr(ctx context.Context) error { return ctx.Err() }

// enqueue writes a job with msgpack args, as the rqueue client does.
func (b *testBundle) enqueue(id string, args worker.Args, mod func(*headgate.Envelope)) {
	b.t.Helper()
	payload, err := msgpack.Marshal(args)
	mustOK(b.t, err)
	b.enqueueRaw(headgate.Envelope{ID: id, Kind: args.Kind(), Payload: payload}, mod)
}

func (b *testBundle) enqueueRaw(env headgate.Envelope, mod func(*headgate.Envelope)) {
	b.t.Helper()
	if mod != nil {
		mod(&env)
	}
	_, err := b.store.Enqueue(context.Background(), env)
	mustOK(b.t, err)
}

// waitAck returns the next ack of job id, failing the test after waitLimit.
func (b *testBundle) waitAck(id string) ackEvent {
	b.t.Helper()
	if q := b.early[id]; len(q) > 0 {
		b.early[id] = q[1:]
		return q[0]
	}
	timeout := time.After(waitLimit)
	for {
		select {
		case a := <-b.acks:
			if a.JobID == id {
				return a
			}
			b.early[a.JobID] = append(b.early[a.JobID], a)
		case <-timeout:
			b.t.Fatalf("no ack of job %q within %s", id, waitLimit)
		}
	}
}

func (b *testBundle) job(id string) *headgate.Job {
	b.t.Helper()
	j, err := b.store.GetJob(context.Background(), id)
	mustOK(b.t, err)
	return j
}

func (b *testBundle) advance(d time.Duration) {
	b.t.Helper()
	mustOK(b.t, b.store.AdvanceClock(context.Background(), d))
}

// waitState waits until job id is in state. It polls the store: what it waits for is a
// maintenance pass that happens within milliseconds, not time passing.
func (b *testBundle) waitState(id string, state headgate.State) *headgate.Job {
	b.t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := b.store.GetJob(context.Background(), id)
		if err == nil && j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			got := "no job"
			if j != nil {
				got = string(j.State)
			}
			b.t.Fatalf("job %q: want state %s within %s, have %s (err %v)", id, state, waitLimit, got, err)
		}
		<-tick.C
	}
}

func (b *testBundle) errorHistory(id string) string {
	b.t.Helper()
	h, err := b.store.JobErrors(context.Background(), id)
	mustOK(b.t, err)
	lines := make([]string, len(h))
	for i, e := range h {
		lines[i] = e.String() + "\n" + e.Stack
	}
	return strings.Join(lines, "\n")
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recv returns the next value of ch, failing the test after waitLimit.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out after %s waiting for %s", waitLimit, what)
	}
	panic("unreachable")
}

// logRecorder is a slog handler that sends the messages it gets to a channel.
type logRecorder struct {
	msgs chan string
}

func newLogRecorder() *logRecorder { return &logRecorder{msgs: make(chan string, 1000)} }

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r.msgs <- rec.Message:
	default:
	}
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// waitLog waits for a log message that contains s.
func (r *logRecorder) waitLog(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case m := <-r.msgs:
			if strings.Contains(m, s) {
				return
			}
		case <-timeout:
			t.Fatalf("no log message containing %q within %s", s, waitLimit)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	cases := []struct {
		name  string
		cfg   worker.Config
		field string
	}{
		{"no namespace", worker.Config{}, "Config.Namespace"},
		{"brace in namespace", worker.Config{Namespace: "a{b"}, "Config.Namespace"},
		{"empty queue", worker.Config{Namespace: "n", Queues: []string{"a", ""}}, "Config.Queues[1]"},
		{"colon in queue", worker.Config{Namespace: "n", Queues: []string{"a:b"}}, "Config.Queues[0]"},
		{"colon in id", worker.Config{Namespace: "n", ID: "host:1"}, "Config.ID"},
		{"negative concurrency", worker.Config{Namespace: "n", Concurrency: -1}, "Config.Concurrency"},
		{"negative lease", worker.Config{Namespace: "n", Lease: -time.Second}, "Config.Lease"},
		{"tiny lease", worker.Config{Namespace: "n", Lease: time.Millisecond}, "Config.Lease"},
		{"negative job timeout", worker.Config{Namespace: "n", JobTimeout: -1}, "Config.JobTimeout"},
		{"negative quantum", worker.Config{Namespace: "n", Quantum: -1}, "Config.Quantum"},
		{"retry cap below base", worker.Config{Namespace: "n", RetryBase: time.Minute, RetryCap: time.Second}, "Config.RetryCap"},
		{"negative start timeout", worker.Config{Namespace: "n", StartTimeout: -time.Second}, "Config.StartTimeout"},
	}
	for _, c := range cases {
		_, err := worker.New(rdb, &c.cfg)
		var inv *headgate.InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("%s: New = %v, want an InvalidError on %s", c.name, err, c.field)
		}
	}

	// A nil client is bad input like a bad field, refused as rqueue.NewClient refuses it.
	_, err := worker.New(nil, &worker.Config{Namespace: "n"})
	var inv *headgate.InvalidError
	if !errors.As(err, &inv) || inv.Field != "rdb" {
		t.Errorf("New(nil, ...) = %v, want an InvalidError on rdb", err)
	}

	w, err := worker.New(rdb, &worker.Config{Namespace: "n"})
	mustOK(t, err)
	if id := w.ID(); id == "" || strings.ContainsAny(id, ":{}") {
		t.Errorf("default ID %q is empty or has characters a worker id may not", id)
	}
	if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no handlers") {
		t.Errorf("Start without handlers = %v, want an error saying there are no handlers", err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Errorf("Stop of a worker that never started = %v, want nil", err)
	}

	defaults := (&worker.Config{}).WithDefaults()
	if defaults.Concurrency != worker.ConcurrencyDefault || defaults.Lease != worker.LeaseDefault ||
		defaults.StartTimeout != worker.StartTimeoutDefault ||
		len(defaults.Queues) != 1 || defaults.Queues[0] != worker.QueueDefault {
		t.Errorf("WithDefaults = %+v", defaults)
	}
}

func TestHandleRegistration(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	w, err := worker.New(rdb, &worker.Config{Namespace: "n"})
	mustOK(t, err)
	worker.Handle(w, func(context.Context, *worker.Job[testArgs]) error { return nil })
	worker.Handle(w, func(context.Context, *worker.Job[*ptrArgs]) error { return nil })
	mustPanic(t, "duplicate kind", func() {
		worker.HandleFunc(w, "test", func(context.Context, *headgate.Claim) error { return nil })
	})
	mustPanic(t, "empty kind", func() {
		worker.HandleFunc(w, "", func(context.Context, *headgate.Claim) error { return nil })
	})
}

// ptrArgs has a Kind that reads its receiver; Handle must not call it on a nil pointer.
type ptrArgs struct{ kind string }

func (a *ptrArgs) Kind() string { return a.kind + "ptr" }

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	fn()
}

// stopNow stops the worker at once, for tests that check what Stop does.
func (b *testBundle) stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return b.worker.Stop(ctx)
}

func jobID(i int) string { return fmt.Sprintf("job-%04d", i) }

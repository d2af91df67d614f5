package rqueuetest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/humandur"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// Kit is what a test of producers and handlers needs: a producer Client and the Store of
// a namespace of its own, a clock to freeze and step, a factory of workers, and the
// handlers Drain runs. Everything it made is closed, and its namespace deleted, when the
// test ends.
//
// A Kit belongs to the test it was made for: its methods fail that test.
type Kit struct {
	// Client is a producer of the kit's namespace.
	Client *rqueue.Client
	// Store is the job store of the kit's namespace.
	Store *headgate.Store

	t    testing.TB // for Cleanup and the workers' logs
	fail tb         // where the kit's checks report; t, except in the kit's own tests

	mu       sync.Mutex
	handlers []handler
}

// Config configures a Kit made by NewWithConfig. The zero value is what New uses.
type Config struct {
	// Redis is the server the kit runs on. The kit does not close it, but deletes its
	// namespace there when the test ends. Defaults to an embedded miniredis shared by
	// the test binary (no server needed).
	Redis redis.UniversalClient

	// Client configures the kit's producer: its default queue, attempt limit and
	// retention, as the code under test configures its own. Its Namespace is ignored:
	// a kit always works in a fresh namespace. Defaults to rqueue's defaults.
	Client rqueue.Config
}

// New returns a kit on an embedded miniredis, in a fresh namespace. It needs no Redis
// server, so handler and producer tests run anywhere.
func New(t testing.TB) *Kit {
	t.Helper()
	return NewWithConfig(t, nil)
}

// NewRedis returns a kit on a real redis-server: the one HEADGATE_TEST_REDIS names, or
// else one the test binary starts from PATH (the test is skipped, loudly, when there is
// none, or failed when HEADGATE_REQUIRE_REDIS=1). The kit's namespace is deleted when the
// test ends; other data on the server is left alone. A package whose tests use it
// should run them with Main, which stops the server the binary started.
func NewRedis(t testing.TB) *Kit {
	t.Helper()
	return NewWithConfig(t, &Config{Redis: redistest.Shared(t)})
}

// NewCluster is NewRedis on a Redis Cluster: HEADGATE_TEST_CLUSTER, or a local cluster
// the test binary starts (which takes seconds).
func NewCluster(t testing.TB) *Kit {
	t.Helper()
	return NewWithConfig(t, &Config{Redis: redistest.SharedCluster(t)})
}

// Main runs a package's tests and then stops the redis-servers that NewRedis and
// NewCluster started for them, and removes their files. Without it they die with the
// test binary but leave their temporary directories behind until a later run removes
// them. Use it as
//
//	func TestMain(m *testing.M) { rqueuetest.Main(m) }
func Main(m *testing.M) { redistest.Main(m) }

// NewWithConfig returns a kit configured by cfg; nil means the zero Config.
func NewWithConfig(t testing.TB, cfg *Config) *Kit {
	t.Helper()
	var c Config
	if cfg != nil {
		c = *cfg
	}
	rdb := c.Redis
	if rdb == nil {
		rdb = redistest.Miniredis(t) // closed after the namespace is deleted
	}
	store := NewStore(t, rdb)
	ns := store.Namespace()
	cc := c.Client
	cc.Namespace = ns
	client, err := rqueue.NewClient(rdb, &cc)
	if err != nil {
		t.Fatalf("rqueuetest: new client: %v", err)
	}
	return &Kit{Client: client, Store: store, t: t, fail: t}
}

// Namespace returns the kit's namespace.
func (k *Kit) Namespace() string { return k.Store.Namespace() }

// NewWorker returns a worker of the kit's namespace configured by cfg (nil means the
// defaults), with the handlers registered on the kit (see Handle) already registered.
// Register more with worker.Handle; start it with Start or Run. Its logs at warning level
// and above go to the test's log, and it is stopped when the test ends if it still runs.
//
// cfg.Namespace may be empty or the kit's namespace; any other fails the test.
func (k *Kit) NewWorker(cfg *worker.Config) *worker.Worker {
	k.t.Helper()
	w := k.newWorker(cfg)
	k.t.Cleanup(func() { stopIfRunning(k.t, w) })
	return w
}

// stopIfRunning stops w unless the test stopped it already (and so saw, and handled,
// what its Stop returned), and fails t when that stop fails.
func stopIfRunning(t tb, w *worker.Worker) {
	t.Helper()
	if w.Stopped() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Errorf("rqueuetest: stop worker %s when the test ended: %v", w.ID(), err)
	}
}

// newWorker builds a worker of the kit's namespace with the kit's handlers.
func (k *Kit) newWorker(cfg *worker.Config) *worker.Worker {
	k.t.Helper()
	var c worker.Config
	if cfg != nil {
		c = *cfg
	}
	switch c.Namespace {
	case "", k.Namespace():
		c.Namespace = k.Namespace()
	default:
		fatalf(k.fail, "rqueuetest: worker config names namespace %q, but the kit's is %q: leave Namespace empty",
			c.Namespace, k.Namespace())
	}
	if c.Logger == nil {
		c.Logger = testLogger(k.t)
	}
	w, err := worker.New(k.Store.Client(), &c)
	if err != nil {
		fatalf(k.fail, "rqueuetest: new worker: %v", err)
	}
	k.mu.Lock()
	hs := append([]handler(nil), k.handlers...)
	k.mu.Unlock()
	for _, h := range hs {
		h.register(w)
	}
	return w
}

// Freeze stops the kit's store clock at at (millisecond precision). Every transition of
// the namespace then reads that time, on miniredis and on a real server alike: schedules,
// backoff, leases, rate buckets and retention stand still until Advance or Unfreeze.
func (k *Kit) Freeze(at time.Time) {
	k.fail.Helper()
	freezeClock(k.fail, k.Store, at)
}

// Advance steps the store clock forward by d. A running clock is frozen at now+d.
// Jobs that become due are not promoted by the step itself: a worker's promote duty,
// Drain or Store.PromoteDue does that.
func (k *Kit) Advance(d time.Duration) {
	k.fail.Helper()
	advanceClock(k.fail, k.Store, d)
}

// Unfreeze lets the store clock follow the server's clock again.
func (k *Kit) Unfreeze() {
	k.fail.Helper()
	unfreezeClock(k.fail, k.Store)
}

// Now returns the store time: the frozen time, or the server's clock.
func (k *Kit) Now() time.Time {
	k.fail.Helper()
	return storeTime(k.fail, k.Store)
}

func freezeClock(t tb, s *headgate.Store, at time.Time) {
	t.Helper()
	ctx, cancel := opContext()
	defer cancel()
	if err := s.FreezeClock(ctx, at); err != nil {
		fatalf(t, "rqueuetest: freeze the store clock of namespace %q at %s: %v", s.Namespace(), fmtTime(at), err)
	}
}

func advanceClock(t tb, s *headgate.Store, d time.Duration) {
	t.Helper()
	ctx, cancel := opContext()
	defer cancel()
	if err := s.AdvanceClock(ctx, d); err != nil {
		fatalf(t, "rqueuetest: advance the store clock of namespace %q by %s: %v", s.Namespace(), humandur.String(d), err)
	}
}

func unfreezeClock(t tb, s *headgate.Store) {
	t.Helper()
	ctx, cancel := opContext()
	defer cancel()
	if err := s.UnfreezeClock(ctx); err != nil {
		fatalf(t, "rqueuetest: unfreeze the store clock of namespace %q: %v", s.Namespace(), err)
	}
}

func storeTime(t tb, s *headgate.Store) time.Time {
	t.Helper()
	ctx, cancel := opContext()
	defer cancel()
	now, err := s.Now(ctx)
	if err != nil {
		fatalf(t, "rqueuetest: read the store clock of namespace %q: %v", s.Namespace(), err)
	}
	return now
}

// tb is the part of testing.TB the kit's checks report to. Exported helpers take a
// testing.TB and pass it on; the kit's own tests pass a fake to read the messages.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

// fatalf reports a failure and stops the test, as testing.TB's Fatalf does.
func fatalf(t tb, format string, args ...any) {
	t.Helper()
	t.Errorf(format, args...)
	t.FailNow()
}

// opTimeout bounds one store call of a helper that takes no context.
const opTimeout = 30 * time.Second

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// fmtTime formats a store time to the millisecond, in UTC.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// testLogger sends warnings and errors to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

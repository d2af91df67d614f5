package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

func TestMain(m *testing.M) { Main(m) }

// fakeTB records what the kit reports, so the kit's tests can read its failure
// messages. FailNow stops the check by panicking with errFailNow, which runFake recovers.
type fakeTB struct {
	errors    []string
	failedNow bool
}

var errFailNow = errors.New("FailNow")

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) FailNow() {
	f.failedNow = true
	panic(errFailNow)
}

// message returns everything reported, one report a line.
func (f *fakeTB) message() string { return strings.Join(f.errors, "\n") }

// runFake runs fn with a fake TB and returns it.
func runFake(fn func(t tb)) *fakeTB {
	f := &fakeTB{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != errFailNow {
				panic(r)
			}
		}()
		fn(f)
	}()
	return f
}

// wantFailure checks that f failed the test, stopping it, with a message containing
// every part.
func wantFailure(t *testing.T, f *fakeTB, parts ...string) {
	t.Helper()
	if !f.failedNow {
		t.Errorf("the check did not stop the test (FailNow); reported: %q", f.errors)
	}
	msg := f.message()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("failure message lacks %q; it is:\n%s", p, msg)
		}
	}
}

// wantPass checks that f reported nothing.
func wantPass(t *testing.T, f *fakeTB) {
	t.Helper()
	if f.failedNow || len(f.errors) > 0 {
		t.Errorf("the check failed the test:\n%s", f.message())
	}
}

// kitBackend makes a kit on one backend.
type kitBackend struct {
	name string
	new  func(t testing.TB) *Kit
}

var kitBackends = []kitBackend{{"miniredis", New}, {"redis", NewRedis}}

// onKits runs fn as a parallel subtest on a fresh kit of each backend.
func onKits(t *testing.T, fn func(t *testing.T, k *Kit)) {
	t.Helper()
	for _, b := range kitBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.new(t))
		})
	}
}

// kitEpoch is where the tests freeze the store clock.
var kitEpoch = time.UnixMilli(1_750_000_000_000)

// testCtx is a context bounded for one test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mailArgs are the args of most of the kit's test jobs.
type mailArgs struct {
	To      string `msgpack:"to"`
	Subject string `msgpack:"subject"`
}

func (mailArgs) Kind() string { return "send_email" }

func mustEnqueueArgs(t testing.TB, k *Kit, args rqueue.Args, opts *rqueue.EnqueueOpts) *rqueue.Result {
	t.Helper()
	res, err := k.Client.Enqueue(testCtx(t), args, opts)
	if err != nil {
		t.Fatalf("enqueue %s: %v", args.Kind(), err)
	}
	return res
}

func TestKitClock(t *testing.T) {
	t.Parallel()
	backends := append(kitBackends[:len(kitBackends):len(kitBackends)], kitBackend{"cluster", NewCluster})
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if b.name == "cluster" && testing.Short() {
				t.Skip("starting a cluster takes seconds")
			}
			k := b.new(t)
			k.Freeze(kitEpoch)
			if got := k.Now(); !got.Equal(kitEpoch) {
				t.Errorf("Now after Freeze = %s, want %s", fmtTime(got), fmtTime(kitEpoch))
			}
			k.Advance(90 * time.Second)
			if got, want := k.Now(), kitEpoch.Add(90*time.Second); !got.Equal(want) {
				t.Errorf("Now after Advance = %s, want %s", fmtTime(got), fmtTime(want))
			}
			// The producer schedules on the store clock: a job due in a minute is due a
			// minute after the frozen time, whatever the host's clock says.
			res := mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, &rqueue.EnqueueOpts{ScheduledIn: time.Minute})
			if want := kitEpoch.Add(150 * time.Second); res.State != headgate.StateScheduled || !res.ScheduledAt.Equal(want) {
				t.Errorf("enqueue in a minute: %s at %s, want scheduled at %s", res.State, fmtTime(res.ScheduledAt), fmtTime(want))
			}
			k.Unfreeze()
			if got := k.Now(); time.Since(got).Abs() > time.Hour {
				t.Errorf("Now after Unfreeze = %s, want about the server's clock (%s)", fmtTime(got), fmtTime(time.Now()))
			}
		})
	}
}

func TestKitNamespaceDeletedAtCleanup(t *testing.T) {
	t.Parallel()
	for _, b := range kitBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			var (
				store *headgate.Store
				other string
			)
			t.Run("kit", func(t *testing.T) {
				k := b.new(t)
				other = b.new(t).Namespace()
				if k.Namespace() == other {
					t.Fatalf("two kits share namespace %q", other)
				}
				store = k.Store
				mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, &rqueue.EnqueueOpts{Retention: time.Hour})
				RequireEnqueued(t, k.Store, Enqueued{Kind: "send_email"})
			})
			if store == nil {
				t.Fatal("the kit subtest did not run")
			}
			// The shared server outlives the subtest; its client was closed with it.
			var rdb redis.UniversalClient
			if b.name == "miniredis" {
				rdb = redistest.Miniredis(t)
			} else {
				rdb = redistest.Shared(t)
			}
			keys, err := rdb.Keys(testCtx(t), headgate.KeyPattern(store.Namespace())).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) > 0 {
				t.Errorf("namespace %q still has keys after the test: %q", store.Namespace(), keys)
			}
		})
	}
}

func TestKitConfig(t *testing.T) {
	t.Parallel()
	k := NewWithConfig(t, &Config{Client: rqueue.Config{Namespace: "ignored", Queue: "mail", Retention: time.Hour}})
	if k.Namespace() == "ignored" {
		t.Errorf("the kit used the client config's namespace; want a fresh one")
	}
	res := mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, nil)
	if res.Queue != "mail" {
		t.Errorf("queue = %q, want the client config's %q", res.Queue, "mail")
	}
	j, err := k.Store.GetJob(testCtx(t), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Retention != time.Hour {
		t.Errorf("retention = %s, want the client config's 1h", j.Retention)
	}
}

// brokenStore is a store whose client is closed: every call fails.
func brokenStore(t *testing.T) *headgate.Store {
	t.Helper()
	rdb := redistest.Miniredis(t)
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "broken"})
	if err != nil {
		t.Fatal(err)
	}
	_ = rdb.Close()
	return s
}

func TestKitClockFailures(t *testing.T) {
	t.Parallel()
	s := brokenStore(t)
	wantFailure(t, runFake(func(t tb) { freezeClock(t, s, kitEpoch) }),
		`rqueuetest: freeze the store clock of namespace "broken" at 2025-06-15T15:06:40.000Z: redis: client is closed`)
	wantFailure(t, runFake(func(t tb) { advanceClock(t, s, time.Minute) }),
		`rqueuetest: advance the store clock of namespace "broken" by 1m: redis: client is closed`)
	wantFailure(t, runFake(func(t tb) { unfreezeClock(t, s) }),
		`rqueuetest: unfreeze the store clock of namespace "broken": redis: client is closed`)
	wantFailure(t, runFake(func(t tb) { storeTime(t, s) }),
		`rqueuetest: read the store clock of namespace "broken": redis: client is closed`)
}

func TestKitNewWorker(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	k := New(t)
	ran := make(chan string, 1)
	Handle(k, func(ctx context.Context, job *worker.Job[mailArgs]) error {
		ran <- job.Args.To
		return nil
	})
	w := k.NewWorker(&worker.Config{Queues: []string{"default"}})
	if got := w.Store().Namespace(); got != k.Namespace() {
		t.Errorf("worker namespace = %q, want the kit's %q", got, k.Namespace())
	}
	// The kit's handlers are registered on it: it runs the job on its own.
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, nil)
	select {
	case to := <-ran:
		if to != "ada@example.com" {
			t.Errorf("handler got %q", to)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not run the job")
	}
	// Not stopped here: the kit stops it when the test ends.

	f := runFake(func(ft tb) {
		k.fail = ft
		k.NewWorker(&worker.Config{Namespace: "elsewhere"})
	})
	wantFailure(t, f, `rqueuetest: worker config names namespace "elsewhere", but the kit's is "`+k.Namespace()+`": leave Namespace empty`)
}

// A worker the test stopped itself, handling what Stop returned, is left alone when the
// test ends: the kit stops only a worker that still runs, so an error the test expected
// does not fail it again.
func TestKitNewWorkerStoppedByTheTest(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	k := New(t)
	running := make(chan struct{})
	release := make(chan struct{})
	Handle(k, func(context.Context, *worker.Job[mailArgs]) error {
		close(running)
		<-release // ignores its cancelled context: Stop reports it
		return nil
	})
	w := k.NewWorker(&worker.Config{Queues: []string{"default"}, ShutdownTimeout: time.Millisecond})
	if w.Stopped() {
		t.Error("a worker not started yet reports Stopped")
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, nil)
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not run the job")
	}
	err := w.Stop(ctx)
	close(release)
	if err == nil || !strings.Contains(err.Error(), "ignore context cancellation") {
		t.Fatalf("Stop = %v, want the handler that ignores its context reported", err)
	}
	if !w.Stopped() {
		t.Error("Stopped = false after Stop returned")
	}
	wantPass(t, runFake(func(ft tb) { stopIfRunning(ft, w) }))
}

func TestHandleFailures(t *testing.T) {
	t.Parallel()
	k := New(t)
	Handle(k, func(context.Context, *worker.Job[mailArgs]) error { return nil })
	f := runFake(func(ft tb) {
		k.fail = ft
		HandleFunc(k, "send_email", func(context.Context, *headgate.Claim) error { return nil })
	})
	wantFailure(t, f, `rqueuetest: kind "send_email" already has a handler on this kit`)
	f = runFake(func(ft tb) {
		k.fail = ft
		HandleFunc(k, "", func(context.Context, *headgate.Claim) error { return nil })
	})
	wantFailure(t, f, "rqueuetest: cannot register a handler for an empty kind")
	f = runFake(func(ft tb) {
		k.fail = ft
		Handle[invoiceArgs](k, nil)
	})
	wantFailure(t, f, `rqueuetest: nil handler for kind "send_invoice"`)
}

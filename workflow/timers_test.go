package workflow_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

// tookDuty is a log handler that tells when its worker took a maintenance duty.
type tookDuty struct {
	duty string
	took chan struct{}
}

func (h *tookDuty) Enabled(context.Context, slog.Level) bool { return true }
func (h *tookDuty) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *tookDuty) WithGroup(string) slog.Handler            { return h }
func (h *tookDuty) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "took duty" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "duty" && a.Value.String() == h.duty {
			select {
			case h.took <- struct{}{}:
			default:
			}
		}
		return true
	})
	return nil
}

// TestTimerArmedElsewhereWakesTheDuty: the worker holding the timers duty has seen no
// timer and sleeps for its longest (an hour here); another worker's task arms one, and
// the arming's announcement wakes the duty, which fires it as soon as the store clock
// reaches its fire time, not an hour later.
func TestTimerArmedElsewhereWakesTheDuty(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		store := rqueuetest.NewStore(t, rdb)
		ns := store.Namespace()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := store.FreezeClock(ctx, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		nap := func(ctx workflow.Context, _ struct{}) (string, error) {
			return "rested", workflow.Sleep(ctx, "nap", time.Millisecond)
		}

		// The duty holder serves another queue: it runs no task of the workflow.
		h := &tookDuty{duty: worker.DutyTimers, took: make(chan struct{}, 1)}
		holder, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "holder", Queues: []string{"elsewhere"},
			PromoteInterval: time.Hour, Logger: slog.New(h)})
		if err != nil {
			t.Fatal(err)
		}
		workflow.Register(holder, "nap", nap)
		startWorker(t, ctx, holder)
		select {
		case <-h.took:
		case <-ctx.Done():
			t.Fatal("the holder never took the timers duty")
		}

		// Another worker, never started (no duties), runs the first task: it arms the
		// timer, due a millisecond after the frozen now.
		first, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "first", Queues: []string{"naps"}})
		if err != nil {
			t.Fatal(err)
		}
		workflow.Register(first, "nap", nap)
		client := workflow.NewClientFromStore(store)
		if _, err := client.Start(ctx, "nap", struct{}{}, workflow.StartOptions{ID: "nap-1", Queue: "naps"}); err != nil {
			t.Fatal(err)
		}
		if a, err := first.Work(ctx, 1); err != nil || len(a) != 1 {
			t.Fatalf("first task: %+v, %v", a, err)
		}
		if err := store.AdvanceClock(ctx, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// A third worker runs the task the fired timer enqueues (it does not hold the
		// timers duty: the holder does).
		runner, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "runner", Queues: []string{"naps"},
			PromoteInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		workflow.Register(runner, "nap", nap)
		startWorker(t, ctx, runner)
		got, err := workflow.Result[string](ctx, client, "nap-1")
		if err != nil || got != "rested" {
			t.Fatalf("result %q, %v; want the timer fired long before the duty's hour-long sleep ended", got, err)
		}
	})
}

// startWorker starts w and stops it when the test ends, giving it a minute to finish.
func startWorker(t testing.TB, ctx context.Context, w *worker.Worker) {
	t.Helper()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.Stop(sctx); err != nil {
			t.Errorf("stop %s: %v", w.ID(), err)
		}
	})
}

package worker_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// A worker's heartbeat lists it with what it serves; Stop writes a last beat, after
// which it is listed as stopped, not live.
func TestHeartbeatListsStoppedWorker(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, func(c *worker.Config) { c.Queues = []string{"mail", headgate.QueueDefault} })
		ran := make(chan struct{}, 1)
		worker.Handle(b.worker, func(context.Context, *worker.Job[testArgs]) error {
			ran <- struct{}{}
			return nil
		})
		b.start()
		b.enqueue("j1", testArgs{}, nil)
		recv(t, ran, "the job to run")
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		mustOK(t, b.worker.Stop(ctx))
		got, err := b.store.Workers(ctx)
		mustOK(t, err)
		host, _ := os.Hostname()
		if len(got) != 1 {
			t.Fatalf("workers: %+v, want one", got)
		}
		w := got[0]
		if w.ID != b.worker.ID() || w.Host != host || w.PID != os.Getpid() ||
			!slices.Equal(w.Queues, []string{"mail", headgate.QueueDefault}) || !slices.Equal(w.Kinds, []string{"test"}) ||
			w.Concurrency != b.cfg.Concurrency || w.InFlight != 0 {
			t.Errorf("heartbeat: %+v", w.Heartbeat)
		}
		if w.Live || !w.Stopped || !w.LastSeen.Equal(epoch) || !w.Started.Equal(epoch) {
			t.Errorf("after Stop: live %v, stopped %v, last seen %v, started %v; want stopped at epoch", w.Live, w.Stopped, w.LastSeen, w.Started)
		}
	})
}

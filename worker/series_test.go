package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
)

// The series duty samples every queue of the namespace, served or not, as soon as a
// worker takes it: the dashboard's throughput chart needs no other writer.
func TestSeriesDutySamplesEveryQueue(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		b.enqueueRaw(headgate.Envelope{ID: "idle", Kind: "test", Queue: "unserved"}, nil)
		worker.Handle(b.worker, func(context.Context, *worker.Job[testArgs]) error { return nil })
		b.start()
		ctx := context.Background()
		deadline := time.Now().Add(waitLimit)
		for {
			series, err := b.store.Series(ctx, epoch, "unserved")
			mustOK(t, err)
			if s := series["unserved"]; len(s) > 0 {
				if len(s) != 1 || !s[0].At.Equal(epoch) || s[0].Completed != 0 || s[0].Failed != 0 {
					t.Errorf("series = %+v, want one sample of zeros at the frozen clock", s)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no sample of queue unserved within %s", waitLimit)
			}
			time.Sleep(5 * time.Millisecond) // polls for the duty's first pass; the store clock stays frozen
		}
	})
}

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
		passed := make(chan error, 1)
		worker.OnDutyPass(b.worker, func(duty string, err error) {
			if duty == worker.DutySeries {
				select {
				case passed <- err:
				default:
				}
			}
		})
		b.start()
		select {
		case err := <-passed:
			mustOK(t, err)
		case <-time.After(waitLimit):
			t.Fatalf("the series duty made no pass within %s", waitLimit)
		}
		series, err := b.store.Series(context.Background(), epoch, "unserved")
		mustOK(t, err)
		if s := series["unserved"]; len(s) != 1 || !s[0].At.Equal(epoch) || s[0].Completed != 0 || s[0].Failed != 0 {
			t.Errorf("series = %+v, want one sample of zeros at the frozen clock", s)
		}
	})
}

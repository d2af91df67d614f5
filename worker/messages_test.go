package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/worker"
)

// An error message repeats at most 200 bytes of a name the caller passed. Validation is
// Go-side, so one backend is enough.
func TestMessagesCutLongNames(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := setup(t, backend{rdb: rdb, mini: m}, nil)
	long := strings.Repeat("s", 10_000)
	stepErr := make(chan error, 1)
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		stepErr <- worker.Step(ctx, long, func(context.Context) error { return nil })
		return nil
	})
	b.enqueue("j1", testArgs{}, nil)
	b.work(1)
	err := recv(t, stepErr, "the step's error")
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Errorf("Step with a 10000-byte name: %.300v…; want an error quoting 200 bytes of it and its length", err)
	}
}

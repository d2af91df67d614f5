package workflow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

// BenchmarkThreeStepWorkflow runs b.N workflows of three no-op steps and a 0 ms sleep
// end to end on a redis-server, a worker of concurrency 50 serving them, and reports
// workflows/s (the store clock runs: the sleep's timer fires through the timers duty).
func BenchmarkThreeStepWorkflow(b *testing.B) {
	rdb := redistest.Shared(b)
	store := rqueuetest.NewStore(b, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := worker.New(rdb, &worker.Config{Namespace: store.Namespace(), Concurrency: 50})
	if err != nil {
		b.Fatal(err)
	}
	noop := func(context.Context) (int, error) { return 1, nil }
	workflow.Register(w, "three", func(ctx workflow.Context, _ int) (int, error) {
		for _, name := range []string{"a", "b", "c"} {
			if _, err := workflow.Step(ctx, name, noop, nil); err != nil {
				return 0, err
			}
		}
		return 3, workflow.Sleep(ctx, "nap", 0)
	})
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Stop(context.Background())
	client := workflow.NewClientFromStore(store)
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, b.N)
	for i := range b.N {
		id := fmt.Sprintf("wf-%d", i)
		if _, err := client.Start(ctx, "three", i, workflow.StartOptions{ID: id}); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			if _, err := workflow.Result[int](ctx, client, id); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "workflows/s")
}

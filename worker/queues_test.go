package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
)

// TestExpandQueuesKeepsTheServingOrder: a queue's expansion is served in its place, before
// the queues after it, and only once the queue itself has nothing admissible.
func TestExpandQueuesKeepsTheServingOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) { c.Queues = []string{"high", "low"} })
	worker.ExpandQueues(b.worker, func(q string) []string { return []string{q, q + "@v1"} })
	worker.HandleFunc(b.worker, "test", func(context.Context, *headgate.Claim) error { return nil })
	ctx := context.Background()
	for _, e := range []headgate.Envelope{{ID: "l", Kind: "test", Queue: "low"}, {ID: "hv", Kind: "test", Queue: "high@v1"},
		{ID: "h", Kind: "test", Queue: "high"}, {ID: "other", Kind: "test", Queue: "high@v2"}} {
		if _, err := b.store.Enqueue(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for range 4 {
		for _, a := range b.work(1) {
			order = append(order, a.JobID)
		}
	}
	if want := []string{"h", "hv", "l"}; !slices.Equal(order, want) {
		t.Fatalf("served %q, want %q (high@v2 is not the worker's)", order, want)
	}
}

func TestExpandQueuesPanics(t *testing.T) {
	t.Parallel()
	rdb := redistest.Miniredis(t)
	for _, tc := range []struct {
		name   string
		expand func(*worker.Worker)
		want   string
	}{
		{"twice", func(w *worker.Worker) {
			worker.ExpandQueues(w, func(q string) []string { return []string{q} })
			worker.ExpandQueues(w, func(q string) []string { return []string{q} })
		}, "called twice"},
		{"colon", func(w *worker.Worker) {
			worker.ExpandQueues(w, func(q string) []string { return []string{q + ":x"} })
		}, "contains ':'"},
		{"none", func(w *worker.Worker) { worker.ExpandQueues(w, func(string) []string { return nil }) }, "no queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := worker.New(rdb, &worker.Config{Namespace: redistest.Namespace(t)})
			mustOK(t, err)
			defer func() {
				if s, _ := recover().(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %q, want one that says %q", s, tc.want)
				}
			}()
			tc.expand(w)
		})
	}
}

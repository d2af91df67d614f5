package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
)

// measureBulk counts the bulk verbs by filter on n jobs of 100 partitions, as
// BenchmarkBulkRetry in the root package runs them: a bulk cancel of the available jobs,
// a bulk retry of the cancelled ones, and a bulk delete of the available ones again. The
// jobs are enqueued outside the counted phases, in batches of 1,000, in a namespace of
// their own.
func measureBulk(ctx context.Context, rdb *redis.Client, n int, scripts headgate.ScriptMode,
	measure func(name string, jobs int, f func() error) error) error {
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "cgbulk", Scripts: scripts})
	if err != nil {
		return err
	}
	for first := 0; first < n; first += headgate.BulkBatchMax {
		jobs := make([]headgate.Envelope, 0, headgate.BulkBatchMax)
		for i := first; i < min(first+headgate.BulkBatchMax, n); i++ {
			jobs = append(jobs, headgate.Envelope{ID: fmt.Sprintf("b-%08d", i), Kind: "bench",
				Payload: []byte(`{"n":1}`), PartitionKey: fmt.Sprint("p", i%100)})
		}
		if _, err := store.Enqueue(ctx, jobs...); err != nil {
			return err
		}
	}
	verb := func(name string, from headgate.State,
		run func(context.Context, headgate.JobFilter, *headgate.BulkOptions) (headgate.BulkResult, error)) error {
		return measure(name, n, func() error {
			res, err := run(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: from}, nil)
			if err == nil && res.Moved != int64(n) {
				err = fmt.Errorf("moved %d of %d jobs", res.Moved, n)
			}
			return err
		})
	}
	if err := verb("bulk cancel (available)", headgate.StateAvailable, store.BulkCancel); err != nil {
		return err
	}
	if err := verb("bulk retry (cancelled)", headgate.StateCancelled, store.BulkRetry); err != nil {
		return err
	}
	return verb("bulk delete (available)", headgate.StateAvailable, store.BulkDelete)
}

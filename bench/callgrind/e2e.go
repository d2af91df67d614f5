package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// The bench's e2e scenario (../scenario.go): a preload in EnqueueMany batches of 1,000,
// then a worker of concurrency 50 that drains it.
const (
	e2eBatch       = 1000
	e2eConcurrency = 50
	// redis-server runs some 30 to 60 times slower under callgrind, so the worker's timed
	// duties (promote, reclaim, evict, cron, duty claims, heartbeats, lease renewals) run
	// that much more often per job than in the bench; their intervals are stretched by
	// this factor so that a job pays for them about what it pays in the bench.
	e2eSlowdown = 50
)

// measureE2E counts the bench's e2e scenario on n jobs in a namespace of its own: the
// preload (EnqueueMany batches of e2eBatch), then the drain by a worker.Worker with the
// bench's concurrency, as ../headgate.go starts it (its polls, heartbeats and duties
// count with the jobs, at e2eSlowdown times their intervals), and prints the two phases' sum per job. Unlike the phases of the
// default run, each at a batch of its own, this is the mix of admissions and acks a
// worker sends, with the running jobs' index as small as the worker keeps it.
func measureE2E(ctx context.Context, rdb *redis.Client, n int, scripts headgate.ScriptMode,
	measure func(name string, jobs int, f func() error) error) error {
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "cge2e", Scripts: scripts})
	if err != nil {
		return err
	}
	params := make([]rqueue.EnqueueParams, e2eBatch)
	for i := range params {
		params[i] = rqueue.EnqueueParams{Args: payloadArgs{Data: make([]byte, 100)}}
	}
	if err := measure(fmt.Sprintf("e2e preload (batch of %d)", e2eBatch), n, func() error {
		for done := 0; done < n; done += e2eBatch {
			if _, err := client.EnqueueMany(ctx, params[:min(e2eBatch, n-done)]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: "cge2e", Scripts: scripts, Concurrency: e2eConcurrency,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lease:             e2eSlowdown * worker.LeaseDefault,
		ReclaimInterval:   e2eSlowdown * worker.ReclaimIntervalDefault,
		PromoteInterval:   e2eSlowdown * worker.PromoteIntervalDefault,
		EvictInterval:     e2eSlowdown * worker.EvictIntervalDefault,
		CronInterval:      e2eSlowdown * worker.CronIntervalDefault,
		DutyLease:         e2eSlowdown * worker.DutyLeaseDefault,
		HeartbeatInterval: e2eSlowdown * worker.HeartbeatIntervalDefault,
	})
	if err != nil {
		return err
	}
	var handled atomic.Int64
	drained := make(chan struct{})
	worker.Handle(w, func(context.Context, *worker.Job[payloadArgs]) error {
		if handled.Add(1) == int64(n) {
			close(drained)
		}
		return nil
	})
	return measure(fmt.Sprintf("e2e drain (worker, concurrency %d)", e2eConcurrency), n, func() error {
		if err := w.Start(ctx); err != nil {
			return err
		}
		select {
		case <-drained:
		case <-time.After(10 * time.Minute):
			err = fmt.Errorf("handled %d of %d jobs in 10 minutes", handled.Load(), n)
		}
		// Stop waits for the last acks, so that they count in the phase.
		if serr := w.Stop(ctx); err == nil {
			err = serr
		}
		return err
	})
}

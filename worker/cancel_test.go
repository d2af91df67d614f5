package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// An operator's cancel reaches the running handler through the cancel channel, with its
// own cause, long before any renewal: the lease here is renewed every 20 minutes.
func TestCancelReachesRunningHandler(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		logs := newLogCapture()
		b := setup(t, rdb, func(c *worker.Config) {
			c.Lease = time.Hour
			c.Logger = logs.logger()
		})
		// What the handler returns is dropped: the job is no longer this worker's.
		started, cause := b.handleUntilCancelled(func(context.Context) error { return nil })
		b.start()
		b.enqueue("j1", testArgs{}, func(e *headgate.Envelope) { e.PartitionKey = "p" })
		recv(t, started, "the handler to start")
		mustOK(t, b.store.Cancel(context.Background(), "j1"))
		err := recv(t, cause, "the handler's cancellation")
		if !errors.Is(err, worker.ErrCancelled) || errors.Is(err, worker.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrCancelled", err)
		}
		if j := b.job("j1"); j.State != headgate.StateCancelled {
			t.Errorf("state = %s, want cancelled", j.State)
		}
		ls := logs.wait(t, 1, slog.LevelInfo, "cancelled by an operator")
		checkJobFields(t, ls[0], map[string]string{"job_id": "j1", "kind": "test", "partition": "p", "attempt": "1"})
		// The handler's success was dropped, not acked over the cancel.
		if j := b.job("j1"); j.State != headgate.StateCancelled {
			t.Errorf("state after the handler returned = %s, want cancelled", j.State)
		}
	})
}

// A cancel stops the handler of that job only.
func TestCancelStopsOnlyThatJob(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, func(c *worker.Config) { c.Lease = time.Hour })
		started := make(chan string, 2)
		causes := make(chan error, 2)
		release := make(chan struct{})
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			started <- job.ID
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				causes <- context.Cause(ctx)
				return nil
			}
		})
		b.start()
		b.enqueue("a", testArgs{}, nil)
		b.enqueue("b", testArgs{}, nil)
		recv(t, started, "a handler to start")
		recv(t, started, "the other handler to start")
		mustOK(t, b.store.Cancel(context.Background(), "a"))
		if err := recv(t, causes, "a's cancellation"); !errors.Is(err, worker.ErrCancelled) {
			t.Fatalf("cause = %v, want ErrCancelled", err)
		}
		close(release)
		if a := b.waitAck("b"); a.Outcome != headgate.OutcomeSuccess || a.Err != nil {
			t.Errorf("b's ack = %+v, want success", a)
		}
		select {
		case err := <-causes:
			t.Errorf("b's handler was cancelled too: %v", err)
		default:
		}
	})
}

// Cancel publishes from a script; on a Redis Cluster an ordinary PUBLISH is broadcast
// over the cluster bus, so a subscriber on any node, master or replica, hears it.
func TestCancelPublishReachesEveryClusterNode(t *testing.T) {
	t.Parallel()
	cc, ok := redistest.SharedCluster(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("SharedCluster is not a *redis.ClusterClient")
	}
	ctx := context.Background()
	ns := redistest.Namespace(t)
	store, err := headgate.NewStore(cc, &headgate.StoreConfig{Namespace: ns})
	mustOK(t, err)
	var (
		mu   sync.Mutex
		subs []*redis.PubSub
	)
	mustOK(t, cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		ps := node.Subscribe(ctx, store.CancelledChannel())
		if _, err := ps.Receive(ctx); err != nil {
			return err
		}
		mu.Lock()
		subs = append(subs, ps)
		mu.Unlock()
		return nil
	}))
	t.Cleanup(func() {
		for _, ps := range subs {
			_ = ps.Close()
		}
	})
	if len(subs) < 2 {
		t.Fatalf("subscribed on %d nodes, want every node of the cluster", len(subs))
	}
	_, err = store.Enqueue(ctx, headgate.Envelope{ID: "j1", Kind: "test"})
	mustOK(t, err)
	claims, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "w-1", Queues: []string{"default"},
		Capacity: 1, Lease: time.Minute, Quantum: 1})
	mustOK(t, err)
	if len(claims) != 1 {
		t.Fatalf("admitted %d jobs, want 1", len(claims))
	}
	mustOK(t, store.Cancel(ctx, "j1"))
	for i, ps := range subs {
		mctx, cancel := context.WithTimeout(ctx, waitLimit)
		m, err := ps.ReceiveMessage(mctx)
		cancel()
		if err != nil {
			t.Errorf("node %d: no cancel message: %v", i, err)
			continue
		}
		ref, err := headgate.ParseCancelled(m.Payload)
		if err != nil || ref != claims[0].LeaseRef() {
			t.Errorf("node %d: message %q = %+v, %v; want %+v", i, m.Payload, ref, err, claims[0].LeaseRef())
		}
	}
}

// A worker that missed the push (its subscription was down) learns of the cancel at its
// next renewal, with the same cause.
func TestCancelMissedPushFoundAtRenewal(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil) // Lease 300ms: renewals every 100ms
		started, cause := b.handleUntilCancelled(func(context.Context) error { return nil })
		b.start()
		worker.DropCancelChannel(b.worker)
		b.enqueue("j1", testArgs{}, nil)
		recv(t, started, "the handler to start")
		mustOK(t, b.store.Cancel(context.Background(), "j1"))
		if err := recv(t, cause, "the handler's cancellation"); !errors.Is(err, worker.ErrCancelled) {
			t.Errorf("cause = %v, want ErrCancelled", err)
		}
	})
}

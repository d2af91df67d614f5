package rqueue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

// TestDurable: Config.DurableReplicas reaches the store. On a server without replicas
// every enqueue is written but reported not durable, with its results, and enqueueing
// the same id again is a replay. On a cluster, whose masters have a replica each, the
// replica confirms.
func TestDurable(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		testNotDurable(t)
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		b := setup(t, redistest.SharedCluster(t), &rqueue.Config{DurableReplicas: 1, DurableTimeout: 10 * time.Second})
		res, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, nil)
		if err != nil || res.State != headgate.StateAvailable {
			t.Fatalf("durable Enqueue on a cluster = %+v, %v; want available, no error", res, err)
		}
		many, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{To: "b"}}, {Args: emailArgs{To: "c"}}})
		if err != nil || len(many) != 2 {
			t.Fatalf("durable EnqueueMany on a cluster = %v, %v", many, err)
		}
	})
}

func testNotDurable(t *testing.T) {
	rdb := redistest.Start(t).Client(t) // no replicas
	b := setup(t, rdb, &rqueue.Config{DurableReplicas: 1, DurableTimeout: 20 * time.Millisecond})
	if got := b.client.Config(); got.DurableReplicas != 1 || got.DurableTimeout != 20*time.Millisecond {
		t.Fatalf("Config() = %+v, want the durable settings given", got)
	}

	res, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, nil)
	var nd *headgate.NotDurableError
	if !errors.As(err, &nd) || nd.Replicas != 0 || nd.Wanted != 1 {
		t.Fatalf("Enqueue = %v, want *headgate.NotDurableError 0 of 1", err)
	}
	if res == nil || res.ID == "" || res.State != headgate.StateAvailable {
		t.Fatalf("Enqueue result = %+v, want the written job", res)
	}
	if j := b.job(t, res.ID); j.State != headgate.StateAvailable {
		t.Errorf("job state = %s, want available", j.State)
	}
	again, err := b.client.Enqueue(b.ctx, emailArgs{To: "a"}, &rqueue.EnqueueOpts{ID: res.ID})
	if !errors.As(err, &nd) || again == nil || !again.Replayed {
		t.Errorf("enqueue again = %+v, %v; want a replay, not durable", again, err)
	}

	many, err := b.client.EnqueueMany(b.ctx, []rqueue.EnqueueParams{{Args: emailArgs{To: "b"}}, {Args: emailArgs{To: "c"}}})
	if !errors.As(err, &nd) || len(many) != 2 || many[0] == nil || many[1] == nil {
		t.Fatalf("EnqueueMany = %v, %v; want two results and *headgate.NotDurableError", many, err)
	}
	if n := b.unfinished(t, rqueue.QueueDefault); n != 3 {
		t.Errorf("%d unfinished jobs, want 3: not durable is still written", n)
	}

	// Without the option nothing waits.
	plain := setup(t, rdb, nil)
	if _, err := plain.client.Enqueue(plain.ctx, emailArgs{}, nil); err != nil {
		t.Errorf("Enqueue without DurableReplicas = %v", err)
	}
}

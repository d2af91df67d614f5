package headgate_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
)

// TestDurableEnqueue: with DurableReplicas set, Enqueue reports whether replicas
// confirmed the batch, and an unconfirmed batch is still written and safe to replay.
func TestDurableEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := redistest.Start(t)
	rdb := primary.Client(t)
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "durable",
		DurableReplicas: 1, DurableTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	job := headgate.Envelope{ID: "a", Kind: "k"}

	res, err := s.Enqueue(ctx, job)
	var nd *headgate.NotDurableError
	if !errors.As(err, &nd) || nd.Replicas != 0 || nd.Wanted != 1 {
		t.Fatalf("enqueue with no replica: %v, want NotDurableError 0 of 1", err)
	}
	if len(res) != 1 || res[0].State != headgate.StateAvailable {
		t.Errorf("an unconfirmed batch is still written: got %+v", res)
	}

	// Sync a new replica at once rather than after the default 5s delay.
	if err := rdb.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	replica := redistest.Start(t)
	host, port, err := net.SplitHostPort(primary.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Client(t).ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	// Replication starts asynchronously; wait until the primary counts the replica.
	deadline := time.Now().Add(10 * time.Second)
	for info := ""; !strings.Contains(info, "connected_slaves:1") || !strings.Contains(info, "state=online"); info = rdb.Info(ctx, "replication").Val() {
		if time.Now().After(deadline) {
			t.Fatal("replica never connected")
		}
		time.Sleep(20 * time.Millisecond) // waiting on Redis's replication handshake, not on time
	}
	// A confirmed WAIT returns at once; the long timeout only keeps a loaded machine from
	// failing the test.
	patient, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "durable",
		DurableReplicas: 1, DurableTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err = patient.Enqueue(ctx, job, headgate.Envelope{ID: "b", Kind: "k"})
	if err != nil {
		t.Fatalf("enqueue with a replica: %v", err)
	}
	if !res[0].Replayed || res[1].Replayed {
		t.Errorf("replay after NotDurable: %+v", res)
	}
}

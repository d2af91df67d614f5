package headgate_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

type tlsArgs struct {
	N int `msgpack:"n"`
}

func (tlsArgs) Kind() string { return "tls" }

// TestTLS runs a producer and a worker over a rediss:// connection to redis-server's TLS
// port, whose certificate the test generated: the client verifies it against the test's
// authority, and a client that does not trust it cannot connect.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.StartTLS(t)
	rdb := srv.TLSClient(t)

	w, err := worker.New(rdb, &worker.Config{Namespace: "tls", Concurrency: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan int, 10)
	worker.Handle(w, func(ctx context.Context, j *worker.Job[tlsArgs]) error {
		ran <- j.Args.N
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	producer, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		if _, err := producer.Enqueue(ctx, tlsArgs{N: n}, nil); err != nil {
			t.Fatalf("Enqueue over TLS: %v", err)
		}
	}
	seen := map[int]bool{}
	for len(seen) < 3 {
		select {
		case n := <-ran:
			seen[n] = true
		case <-ctx.Done():
			t.Fatalf("ran %v of 3 jobs over TLS", seen)
		}
	}

	// The connection is TLS for real: the server's certificate is checked, and the TLS
	// port does not speak plain RESP.
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	untrusting := redis.NewClient(opts) // system roots only
	t.Cleanup(func() { _ = untrusting.Close() })
	if err := untrusting.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("PING without the test authority = %v, want a certificate error", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: srv.TLSAddr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	t.Cleanup(func() { _ = plain.Close() })
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("plain PING to the TLS port succeeded")
	}
}

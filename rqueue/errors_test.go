package rqueue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

type kindlessArgs struct{}

func (kindlessArgs) Kind() string { return "" }

// unencodableArgs are args msgpack cannot encode: a caller's mistake, like a bad option.
type unencodableArgs struct {
	Done chan struct{} `msgpack:"done"`
}

func (unencodableArgs) Kind() string { return "unencodable" }

// Errors name the option the caller set, not the store's envelope field, read without
// double spaces, and quote no more than 200 bytes of a caller's id. Validation happens
// before Redis, so one backend is enough.
func TestErrorsNameTheOption(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: redistest.Namespace(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(name string, err error, field string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			requireInvalid(t, err, field)
			msg := err.Error()
			if strings.Contains(msg, "  ") || strings.Contains(msg, "jobs[") || strings.Contains(msg, "PartitionKey") {
				t.Errorf("message %q has a double space or names an internal field", msg)
			}
			if !strings.Contains(msg, field) {
				t.Errorf("message %q does not name %s", msg, field)
			}
		})
	}
	email := emailArgs{To: "ada@example.com"}
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{Partition: "tenant{1}"})
	check("Partition", err, "EnqueueOpts.Partition")
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{Sticky: "host:1"})
	check("Sticky", err, "EnqueueOpts.Sticky")
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{Queue: "a:b"})
	check("Queue", err, "EnqueueOpts.Queue")
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{RateClass: "c{1}"})
	check("RateClass", err, "EnqueueOpts.RateClass")
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{Tags: []string{"ok", "bad\n"}})
	check("Tags", err, "EnqueueOpts.Tags")
	_, err = c.Enqueue(ctx, kindlessArgs{}, nil)
	check("Kind", err, "args.Kind()")
	_, err = c.EnqueueMany(ctx, []rqueue.EnqueueParams{
		{Args: email},
		{Args: email, Opts: &rqueue.EnqueueOpts{Partition: "t{2}"}},
	})
	check("EnqueueMany", err, "params[1].Opts.Partition")
	_, err = c.Enqueue(ctx, unencodableArgs{}, nil)
	check("Unencodable", err, "args")
	_, err = c.EnqueueMany(ctx, []rqueue.EnqueueParams{{Args: email}, {Args: unencodableArgs{}}})
	check("UnencodableInBatch", err, "params[1].Args")
	big := make([]rqueue.EnqueueParams, headgate.MaxBatch+1)
	for i := range big {
		big[i] = rqueue.EnqueueParams{Args: email}
	}
	_, err = c.EnqueueMany(ctx, big)
	check("BatchTooBig", err, "params")

	long := strings.Repeat("x", 1000)
	_, err = c.Enqueue(ctx, email, &rqueue.EnqueueOpts{ID: long})
	check("LongID", err, "EnqueueOpts.ID")
	if msg := err.Error(); strings.Contains(msg, long[:201]) || !strings.Contains(msg, "(1000 bytes)") {
		t.Errorf("message quotes more than 200 bytes of a 1000-byte id, or does not say it was cut: %q", msg)
	}
}

package headgate_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type SendEmail struct {
	To string `msgpack:"to"`
}

func (SendEmail) Kind() string { return "send_email" }

// Example_readme is the README's first snippet, as written there (readme_test.go holds
// the two together). It is compiled, not run: it needs a Redis at localhost:6379.
func Example_readme() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	// Producer.
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "billing"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &rqueue.EnqueueOpts{
		Partition: "tenant-42",
		Unique:    rqueue.UniqueOpts{Key: "welcome:ada"},
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("enqueued job %s (%s)", res.ID, res.State)

	// Worker.
	w, err := worker.New(rdb, &worker.Config{Namespace: "billing", Concurrency: 50})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[SendEmail]) error {
		log.Printf("sending a welcome email to %s", job.Args.To)
		return nil // nil: done; an error: retried with backoff
	})
	// Until SIGINT or SIGTERM; then it stops admitting, drains, hands back the rest.
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

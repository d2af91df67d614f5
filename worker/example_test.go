package worker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

// EmailArgs are the arguments of an "email" job.
type EmailArgs struct {
	To      string `msgpack:"to"`
	Subject string `msgpack:"subject"`
}

func (EmailArgs) Kind() string { return "email" }

// exampleRedis is a client of an in-memory Redis (miniredis) for the examples, and the
// function that closes both. Production code passes a client of a real Redis.
func exampleRedis() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() {
		rdb.Close()
		m.Close()
	}
}

// A worker with one typed handler. The example runs on miniredis; production code
// passes a client of a real Redis, and enqueues with the rqueue client.
func Example() {
	ctx := context.Background()
	rdb, stop := exampleRedis()
	defer stop()

	w, err := worker.New(rdb, &worker.Config{Namespace: "example", Concurrency: 2})
	if err != nil {
		log.Fatal(err)
	}
	sent := make(chan struct{})
	worker.Handle(w, func(ctx context.Context, job *worker.Job[EmailArgs]) error {
		fmt.Printf("sending %q to %s\n", job.Args.Subject, job.Args.To)
		close(sent)
		return nil
	})
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}

	payload, err := msgpack.Marshal(EmailArgs{To: "ada@example.com", Subject: "Welcome"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Store().Enqueue(ctx, headgate.Envelope{ID: "welcome-ada", Kind: "email", Payload: payload}); err != nil {
		log.Fatal(err)
	}
	<-sent
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: sending "Welcome" to ada@example.com
}

// Steps make a long job resumable: a later attempt skips the steps done.
func ExampleStep() {
	handler := func(ctx context.Context, job *worker.Job[EmailArgs]) error {
		if err := worker.Step(ctx, "render", func(ctx context.Context) error {
			return nil // render the email and store it somewhere durable
		}); err != nil {
			return err
		}
		return worker.Step(ctx, "send", func(ctx context.Context) error {
			return nil // send the rendered email
		})
	}
	_ = handler
}

package rqueue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
)

type SendEmail struct {
	To      string `msgpack:"to"`
	Subject string `msgpack:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

func Example_enqueue() {
	mr, err := miniredis.Run() // any Redis: miniredis here, so the example runs anywhere
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	opts := &rqueue.EnqueueOpts{Partition: "tenant-1", Unique: rqueue.UniqueOpts{Key: "welcome:ada"}}

	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Kind, res.Queue, res.State, res.Duplicate)

	// The unique key is held: nothing new is written, and the result is the holder.
	again, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.ID == res.ID, again.Duplicate)
	// Output:
	// send_email default available false
	// true true
}

// Enqueue middleware sees every batch before it is sent: here it tags each job with the
// service that enqueued it.
func ExampleEnqueueMiddleware() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	origin := func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
		return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
			for i := range envs {
				envs[i].Tags = append(envs[i].Tags, "origin:billing")
			}
			return next(ctx, envs)
		}
	}
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "example",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{origin}})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &rqueue.EnqueueOpts{Tags: []string{"welcome"}})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Store().GetJob(ctx, res.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Tags)
	// Output: [origin:billing welcome]
}

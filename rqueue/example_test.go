package rqueue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

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

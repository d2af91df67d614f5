package workflow_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

type Order struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

// A checkout workflow: a step that is run once whatever crashes, a durable sleep, and
// a signal from outside.
func Example() {
	mr, err := miniredis.Run() // any Redis; miniredis needs no server
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	w, err := worker.New(rdb, &worker.Config{Namespace: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	workflow.Register(w, "checkout", func(ctx workflow.Context, o Order) (string, error) {
		charge, err := workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			return fmt.Sprintf("ch_%s_%d", o.ID, o.Cents), nil // call the payment provider here
		}, nil)
		if err != nil {
			return "", err
		}
		if err := workflow.Sleep(ctx, "settle", 10*time.Millisecond); err != nil {
			return "", err
		}
		tracking, _, err := workflow.Await[string](ctx, "shipped", 0)
		if err != nil {
			return "", err
		}
		return charge + " shipped as " + tracking, nil
	})
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	client, err := workflow.NewClient(rdb, &workflow.ClientConfig{Namespace: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Start(ctx, "checkout", Order{ID: "42", Cents: 1999}, workflow.StartOptions{ID: "order-42"}); err != nil {
		log.Fatal(err)
	}
	// A signal sent before the workflow awaits it is kept until it does.
	if err := client.Signal(ctx, "order-42", "shipped", "TRACK-7"); err != nil {
		log.Fatal(err)
	}
	receipt, err := workflow.Result[string](ctx, client, "order-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(receipt)
	// Output: ch_42_1999 shipped as TRACK-7
}

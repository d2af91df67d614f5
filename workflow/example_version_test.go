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

// Runs pinned to the version of the code they started on: this worker serves buildID,
// and the package route sends new checkouts to it.
func ExampleServeVersions() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	buildID := "2026-12-02.1"
	checkoutV2 := func(ctx workflow.Context, o Order) (string, error) {
		return fmt.Sprintf("charged %d cents for order %s", o.Cents, o.ID), nil
	}

	w, err := worker.New(rdb, &worker.Config{Namespace: "shop", Queues: []string{"checkout"}})
	if err != nil {
		log.Fatal(err)
	}
	workflow.ServeVersions(w, buildID) // the release, commit or content hash of this binary
	workflow.Register(w, "checkout", checkoutV2)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	// Once the new workers run: new runs of the type start on the new version.
	if err := w.Store().PutPackageRoute(ctx, "checkout", buildID); err != nil { // any store of the namespace
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	client := workflow.NewClientFromStore(w.Store())
	if _, err := client.Start(ctx, "checkout", Order{ID: "42", Cents: 1999},
		workflow.StartOptions{ID: "order-42", Queue: "checkout"}); err != nil {
		log.Fatal(err)
	}
	receipt, err := workflow.Result[string](ctx, client, "order-42")
	if err != nil {
		log.Fatal(err)
	}
	row, err := client.Store().GetWorkflow(ctx, "order-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(receipt, "on version", row.PackageVersion)
	// Output: charged 1999 cents for order 42 on version 2026-12-02.1
}

package inspector_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
)

func Example_stats() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := store.Enqueue(ctx,
		headgate.Envelope{ID: "1", Kind: "email", Queue: "mail"},
		headgate.Envelope{ID: "2", Kind: "email", Queue: "mail"},
	); err != nil {
		log.Fatal(err)
	}

	insp, err := inspector.New(rdb, &inspector.Config{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	if err := insp.Pause(ctx, "mail"); err != nil {
		log.Fatal(err)
	}
	if err := insp.SetEnqueueLimit(ctx, "mail", 1000); err != nil {
		log.Fatal(err)
	}
	stats, err := insp.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range stats {
		fmt.Printf("%s: %d available, %d unfinished, limit %d, paused %v\n",
			s.Queue, s.Counts[headgate.StateAvailable], s.Unfinished, *s.Limit, s.Paused)
	}
	// Output:
	// mail: 2 available, 2 unfinished, limit 1000, paused true
}

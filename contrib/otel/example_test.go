package headgateotel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// The producer's middleware writes the trace context into the job; the worker's links
// the attempt's span to it. A program passes its own TracerProvider (or sets the global
// one); the example records spans in memory.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	exp := tracetest.NewInMemoryExporter()
	cfg := &headgateotel.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))}
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "shop",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{headgateotel.EnqueueMiddleware(cfg)}})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: "shop",
		Middleware: []worker.Middleware{headgateotel.WorkerMiddleware(cfg)}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[emailArgs]) error { return nil })

	ctx := context.Background()
	if _, err := client.Enqueue(ctx, emailArgs{To: "ada"}, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Work(ctx, 1); err != nil {
		log.Fatal(err)
	}
	spans := exp.GetSpans()
	for _, s := range spans {
		fmt.Println(s.Name, s.SpanKind)
	}
	fmt.Println("linked:", spans[1].Links[0].SpanContext.SpanID() == spans[0].SpanContext.SpanID())
	// Output:
	// send default producer
	// process default consumer
	// linked: true
}

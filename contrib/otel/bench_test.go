package headgateotel_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/worker"
)

// BenchmarkWorkerMiddleware is the CPU one attempt pays for its span, sampled and
// exported by a batching exporter that drops the spans, or not sampled, against the
// handler alone and against the least span the SDK makes (sdk-floor).
func BenchmarkWorkerMiddleware(b *testing.B) {
	noop := func(context.Context, *headgate.Claim) error { return nil }
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = unsampled.Shutdown(context.Background()) })
	claim := &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "noop", Queue: "default",
		Tags: []string{headgateotel.TraceparentTag + "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		ExpiresAt: time.UnixMilli(31000)}
	ctx := context.Background()
	floor := tp.Tracer("floor")
	for name, h := range map[string]worker.HandlerFunc{
		"plain": noop,
		// The SDK's own cost: a span with no attribute, link or parent, batched and dropped.
		"sdk-floor": func(ctx context.Context, c *headgate.Claim) error {
			_, span := floor.Start(ctx, "process default")
			span.End()
			return nil
		},
		"traced":    headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})(noop),
		"unsampled": headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: unsampled})(noop),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h(ctx, claim)
			}
		})
	}
}

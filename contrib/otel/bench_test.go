package headgateotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// BenchmarkWorkerMiddleware is the CPU one attempt pays for its span, sampled and
// exported by a batching exporter that drops the spans, or not sampled, against the
// handler alone, the least span the SDK makes (sdk-floor) and the span the conventions
// ask for made straight on the SDK (sdk-conventions); and for the metrics instruments
// (metrics), read by a manual reader.
func BenchmarkWorkerMiddleware(b *testing.B) {
	noop := func(context.Context, *headgate.Claim) error { return nil }
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = unsampled.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	metrics, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	claim := allocClaim()
	ctx := context.Background()
	floor := tp.Tracer("floor")
	// What the conventions ask of a span, straight on the SDK: the start's attributes,
	// the attempt's and the link to the producer.
	start := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("messaging.system", "headgate"), attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "process"), attribute.String("messaging.destination.name", "default"))}
	producer := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1},
		TraceFlags: trace.FlagsSampled, Remote: true})
	for name, h := range map[string]worker.HandlerFunc{
		"plain": noop,
		// The SDK's own cost: a span with no attribute, link or parent, batched and dropped.
		"sdk-floor": func(ctx context.Context, c *headgate.Claim) error {
			_, span := floor.Start(ctx, "process default")
			span.End()
			return nil
		},
		// The SDK's cost of what the conventions ask: what bounds traced.
		"sdk-conventions": func(ctx context.Context, c *headgate.Claim) error {
			_, span := floor.Start(ctx, "process default", start...)
			span.AddLink(trace.Link{SpanContext: producer})
			span.SetAttributes(attribute.String("messaging.message.id", c.Envelope.ID),
				attribute.String("headgate.kind", c.Envelope.Kind), attribute.Int("headgate.attempt", c.Envelope.Attempt+1),
				attribute.Int64("headgate.fence", c.Fence))
			span.End()
			return nil
		},
		"traced":    headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})(noop),
		"unsampled": headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: unsampled})(noop),
		"metrics":   metrics.WorkerMiddleware(0)(noop),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h(ctx, claim)
			}
		})
	}
}

// BenchmarkEnqueueMiddleware is the CPU one enqueue of one job pays for its span and
// trace context tag, against the store call alone (plain).
func BenchmarkEnqueueMiddleware(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	res := []headgate.EnqueueResult{{ID: "01KBF8ZQ0D4W1XW6N4V3J9Q2TR"}}
	next := func(context.Context, []headgate.Envelope) ([]headgate.EnqueueResult, error) { return res, nil }
	ctx := context.Background()
	envs := make([]headgate.Envelope, 1)
	for name, h := range map[string]rqueue.EnqueueFunc{
		"plain":  next,
		"traced": headgateotel.EnqueueMiddleware(&headgateotel.Config{TracerProvider: tp})(next),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				envs[0] = headgate.Envelope{ID: "01KBF8ZQ0D4W1XW6N4V3J9Q2TR", Kind: "noop", Payload: []byte{0x80}}
				if _, err := h(ctx, envs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

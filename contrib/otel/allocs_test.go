package headgateotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
)

// allocClaim is an attempt as the bench's e2e scenario makes them: a job of the default
// queue without a partition or a rate class, traced by its producer.
func allocClaim() *headgate.Claim {
	return &headgate.Claim{Envelope: headgate.Envelope{ID: "01KBF8ZQ0D4W1XW6N4V3J9Q2TR", Kind: "noop", Queue: "default",
		ScheduledAt: time.UnixMilli(1000), Attempt: 1,
		Tags: []string{headgateotel.TraceparentTag + "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		Fence: 1, ExpiresAt: time.UnixMilli(31000)}
}

// A successful attempt's measurements allocate nothing: the attribute sets and the
// options that carry them are made once per queue and kind.
func TestMetricsMiddlewareAllocs(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	h := m.WorkerMiddleware(0)(func(context.Context, *headgate.Claim) error { return nil })
	claim, ctx := allocClaim(), context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = h(ctx, claim) }); n != 0 {
		t.Errorf("a successful attempt's measurements: %.0f allocations, want 0", n)
	}
}

// A traced attempt allocates what the SDK's least span does (the span, its context and
// its snapshot at the end) and five more the SDK makes of what it is given: the copy of
// the start's attributes, the span's slice of them and its growth for the attempt's
// own, the link and its copy at the end. The attributes, the options and the trace
// context's parse cost none. (Passing the attempt's attributes with the start from
// pooled options saves the growth but costs more CPU than it saves, sampled or not.)
func TestWorkerSpanAllocs(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := context.Background()
	floor := tp.Tracer("floor")
	least := testing.AllocsPerRun(100, func() {
		_, span := floor.Start(ctx, "process default")
		span.End()
	})
	h := headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})(
		func(context.Context, *headgate.Claim) error { return nil })
	claim := allocClaim()
	if n := testing.AllocsPerRun(100, func() { _ = h(ctx, claim) }); n > least+5 {
		t.Errorf("a traced attempt: %.0f allocations, want at most %.0f (the SDK's least span's %.0f and 5)", n, least+5, least)
	}
}

// An attempt that is not sampled allocates what the SDK's start of a span that is not
// sampled does with the same options (the span, its context and the copy of the
// attributes a sampler sees), and nothing more.
func TestUnsampledSpanAllocs(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := context.Background()
	floor := tp.Tracer("floor")
	start := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("messaging.system", "headgate"), attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "process"), attribute.String("messaging.destination.name", "default"))}
	least := testing.AllocsPerRun(100, func() {
		_, span := floor.Start(ctx, "process default", start...)
		span.End()
	})
	h := headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})(
		func(context.Context, *headgate.Claim) error { return nil })
	claim := allocClaim()
	if n := testing.AllocsPerRun(100, func() { _ = h(ctx, claim) }); n > least {
		t.Errorf("an attempt not sampled: %.0f allocations, want at most the SDK's %.0f", n, least)
	}
}

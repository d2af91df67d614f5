package headgateotel

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate"
)

// producerOf's in-place parse agrees with the W3C propagator on every traceparent, the
// odd ones included.
func TestProducerOfMatchesPropagator(t *testing.T) {
	const id, span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	for _, tags := range [][]string{
		nil,
		{"red"},
		{TraceparentTag + "00-" + id + "-" + span + "-01"},
		{TraceparentTag + "00-" + id + "-" + span + "-00"},
		{TraceparentTag + "00-" + id + "-" + span + "-03"}, // the random flag
		{TraceparentTag + "00-" + id + "-" + span + "-0G"},
		{TraceparentTag + "00-" + id + "-" + span + "-0A"}, // uppercase hex
		{TraceparentTag + "00-0AF7651916CD43DD8448EB211C80319C-" + span + "-01"},
		{TraceparentTag + "00-00000000000000000000000000000000-" + span + "-01"},
		{TraceparentTag + "00-" + id + "-0000000000000000-01"},
		{TraceparentTag + "ff-" + id + "-" + span + "-01"},
		{TraceparentTag + "01-" + id + "-" + span + "-01-later"},
		{TraceparentTag + "00-" + id + "-" + span + "-01-extra"},
		{TraceparentTag + "00-" + id + "x" + span + "-01"},
		{TraceparentTag + "00-" + id + "-" + span + "-01", TracestateTag + "vendor=1"},
		{"blue", TraceparentTag + "00-" + id + "-" + span + "-01", "red"},
	} {
		want := trace.SpanContextFromContext(propagator.Extract(context.Background(), tagCarrier(tags)))
		if got := producerOf(tags); !got.Equal(want) {
			t.Errorf("producerOf(%q) = %v, want %v", tags, got, want)
		}
	}
}

// traceTags writes what the W3C propagator does, for every span context: the flags it
// keeps, the trace state when it fits a tag, nothing for an invalid context.
func TestTraceTagsMatchPropagator(t *testing.T) {
	tid, err := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	mustOK(t, err)
	sid, err := trace.SpanIDFromHex("b7ad6b7169203331")
	mustOK(t, err)
	state, err := trace.ParseTraceState("vendor=1,other=two")
	mustOK(t, err)
	long, err := trace.ParseTraceState("vendor=" + strings.Repeat("x", 250))
	mustOK(t, err)
	for _, sc := range []trace.SpanContextConfig{
		{},
		{TraceID: tid},
		{TraceID: tid, SpanID: sid},
		{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled},
		{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled | trace.FlagsRandom},
		{TraceID: tid, SpanID: sid, TraceFlags: 0xff},
		{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: state},
		{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: long},
	} {
		carrier := propagation.MapCarrier{}
		propagator.Inject(trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(sc)), carrier)
		var want []string
		if tp := carrier.Get("traceparent"); tp != "" {
			want = append(want, TraceparentTag+tp)
		}
		if ts := carrier.Get("tracestate"); ts != "" && len(TracestateTag)+len(ts) <= headgate.MaxNameBytes {
			want = append(want, TracestateTag+ts)
		}
		if got := traceTags(trace.NewSpanContext(sc)); !slices.Equal(got, want) {
			t.Errorf("traceTags(%+v) = %q, want %q", sc, got, want)
		}
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

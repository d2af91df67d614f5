package headgateotel

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
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

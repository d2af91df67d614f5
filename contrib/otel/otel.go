package headgateotel

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

// Tags that carry a job's trace context: the tag is the prefix followed by the W3C
// header's value. They are meta tags (headgate.MetaTagPrefix): travelling with the job
// but not filed in the tag indexes, so that a trace context of its own per enqueue costs
// no index key per state. The prefixes are short so that a traceparent tag (59 bytes)
// stays under Redis's hash-max-listpack-value (64): a longer value turns the job's hash
// from the compact listpack into a hash table, which costs every transition of the job
// Redis CPU and memory.
const (
	TraceparentTag = headgate.MetaTagPrefix + "tp="
	TracestateTag  = headgate.MetaTagPrefix + "ts="
)

// instrumentation names the tracer.
const instrumentation = "github.com/headgate/headgate/contrib/otel"

// Config configures the middleware.
type Config struct {
	// TracerProvider makes the tracer. Defaults to otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Child makes an attempt's span a child of the producer's span instead of the root of
	// a trace of its own with a link to it. A link is the default: a job may run long
	// after its enqueue, and several times, which makes one trace of it all hard to read.
	// Child implies PropagateUnsampled.
	Child bool
	// PropagateUnsampled makes EnqueueMiddleware write the trace context into the jobs of
	// a producer span that is not sampled too. By default only a sampled span's context
	// travels: an attempt's span links to its producer's (or starts a trace of its own),
	// and a link to a span that was not sampled leads nowhere, while the tag costs every
	// job about 60 bytes of Redis memory and Redis CPU at each of its transitions (with a
	// sampler that keeps one trace in ten, nine jobs in ten would carry a context no
	// backend has). Set it where the attempts' sampler must follow the producer's
	// decision (a child's ParentBased sampler, as Child does), or where logs are matched
	// by the producer's trace id.
	PropagateUnsampled bool
}

// propagateUnsampled reports whether EnqueueMiddleware writes the trace context of a
// producer span that is not sampled.
func (c *Config) propagateUnsampled() bool {
	return c != nil && (c.PropagateUnsampled || c.Child)
}

func (c *Config) tracer() trace.Tracer {
	tp := trace.TracerProvider(nil)
	if c != nil {
		tp = c.TracerProvider
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// propagator writes and reads the W3C trace context of the tags.
var propagator = propagation.TraceContext{}

// EnqueueMiddleware returns the rqueue middleware that traces enqueues and writes the
// trace context into each job's tags.
func EnqueueMiddleware(cfg *Config) rqueue.EnqueueMiddleware {
	tracer := cfg.tracer()
	unsampled := cfg.propagateUnsampled()
	var queues sync.Map // queue -> *queueSpans
	return func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
		return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
			if len(envs) == 0 {
				return next(ctx, envs)
			}
			q := spansOf(&queues, "send", trace.SpanKindProducer, queueOf(&envs[0]))
			ctx, span := tracer.Start(ctx, q.name, q.start...)
			defer span.End()
			if span.IsRecording() {
				buf := attrPool.Get().(*[]attribute.KeyValue)
				attrs := (*buf)[:0]
				if len(envs) == 1 {
					attrs = append(attrs, attribute.String("messaging.message.id", envs[0].ID),
						attribute.String("headgate.kind", envs[0].Kind))
				} else {
					attrs = append(attrs, attribute.Int("messaging.batch.message_count", len(envs)))
				}
				putAttrs(span, buf, attrs)
			}
			if sc := span.SpanContext(); sc.IsSampled() || unsampled {
				tags := traceTags(sc)
				// A job without tags of its own, the usual one, shares the batch's: the
				// store copies tags when it checks them, and the full slice expression
				// makes an append by a later middleware copy too.
				shared := tags[:len(tags):len(tags)]
				for i := range envs {
					if len(envs[i].Tags) == 0 {
						envs[i].Tags = shared
					} else {
						envs[i].Tags = append(withoutTraceTags(envs[i].Tags), tags...)
					}
				}
			}
			res, err := next(ctx, envs)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return res, err
		}
	}
}

// traceTags are the trace context tags of sc: what the W3C propagator
// (propagation.TraceContext) writes, a traceparent of version 00 with the sampled and
// random flags, and the trace state when it fits a tag; built in place, since the
// propagator's carrier and strings would cost an enqueue four allocations.
func traceTags(sc trace.SpanContext) []string {
	if !sc.IsValid() {
		return nil
	}
	const p = len(TraceparentTag)
	var b [p + 55]byte
	copy(b[:], TraceparentTag)
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := [1]byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))}
	copy(b[p:], "00-")
	hex.Encode(b[p+3:], tid[:])
	b[p+35] = '-'
	hex.Encode(b[p+36:], sid[:])
	b[p+52] = '-'
	hex.Encode(b[p+53:], flags[:])
	tags := []string{string(b[:])}
	if ts := sc.TraceState().String(); ts != "" && len(TracestateTag)+len(ts) <= headgate.MaxNameBytes {
		tags = append(tags, TracestateTag+ts)
	}
	return tags
}

// WorkerMiddleware returns the worker middleware that traces attempts. Put it first in
// worker.Config.Middleware, so that its span covers the other middleware and records
// the outcome they make.
//
// What an attempt costs beyond the SDK's own span is kept small: the options and the
// attributes a sampler sees are made once per queue, the others are set in one call into
// a span that records, from a reused slice, and a successful attempt's span has at most
// eight attributes (the SDK deduplicates a span's attributes at its end with a map, which
// costs three allocations from the ninth on), so headgate.outcome is set only on an
// attempt that did not succeed.
func WorkerMiddleware(cfg *Config) worker.Middleware {
	t := &attempts{tracer: cfg.tracer(), child: cfg != nil && cfg.Child}
	t.observer = workflowObserver{t.tracer}
	return func(next worker.HandlerFunc) worker.HandlerFunc {
		// The worker wraps each kind's handler apart, so an attempt's queue is nearly
		// always the last attempt's: kept here, its spans cost no lookup.
		var last atomic.Pointer[queueSpans]
		return func(ctx context.Context, c *headgate.Claim) error {
			q := last.Load()
			if queue := queueOf(&c.Envelope); q == nil || q.queue != queue {
				q = spansOf(&t.queues, "process", trace.SpanKindConsumer, queue)
				last.Store(q)
			}
			ctx, span := t.start(ctx, q, c.Envelope.Tags)
			defer span.End()
			if strings.HasPrefix(c.Envelope.Kind, workflowTaskPrefix) {
				ctx = workflow.WithObserver(ctx, t.observer)
			}
			err := next(ctx, c)
			if span.IsRecording() {
				ended(span, c, err)
			}
			return err
		}
	}
}

// attempts is what WorkerMiddleware's spans share. Its work is split in functions of
// small frames: the SDK's start of a span is deep, and a pool goroutine's stack, which
// the garbage collector shrinks while the goroutine waits for work, is copied to a
// larger one each time an attempt runs deeper than it.
type attempts struct {
	tracer   trace.Tracer
	child    bool
	queues   sync.Map // queue -> *queueSpans
	observer workflowObserver
}

// start starts an attempt's span on queue q. The producer's context, from the job's
// tags, is parsed only when it is used: before the start for a child, or to start a
// trace of its own when the worker's context carries a span (its Start's; without one
// the option is not needed, and it costs a context and a span of its own); after it for
// the link of a span that records. An attempt that is not sampled, most of them under a
// ratio sampler, does not parse it.
func (t *attempts) start(ctx context.Context, q *queueSpans, tags []string) (context.Context, trace.Span) {
	opts := q.start
	traced := hasTraceContext(tags)
	parsed := traced && (t.child || trace.SpanContextFromContext(ctx).IsValid())
	var producer trace.SpanContext
	if parsed {
		producer = producerOf(tags)
		switch {
		case !producer.IsValid():
		case t.child:
			ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
		default:
			opts = q.root
		}
	}
	ctx, span := t.tracer.Start(ctx, q.name, opts...)
	if traced && !t.child && span.IsRecording() {
		if !parsed {
			producer = producerOf(tags)
		}
		link(span, producer)
	}
	return ctx, span
}

// link links span to the producer's, when its context is valid. It is added after the
// start, not with trace.WithLinks: that option and the options slice it extends cost
// each attempt three allocations. The samplers of the SDK (ParentBased,
// TraceIDRatioBased, Always/Never) do not look at links.
func link(span trace.Span, producer trace.SpanContext) {
	if producer.IsValid() {
		span.AddLink(trace.Link{SpanContext: producer})
	}
}

// ended sets the attributes of an attempt's recording span once its handler returned,
// and its status when the attempt failed.
func ended(span trace.Span, c *headgate.Claim, err error) {
	env := &c.Envelope
	outcome := worker.OutcomeOf(err)
	buf := attrPool.Get().(*[]attribute.KeyValue)
	attrs := append((*buf)[:0],
		attribute.String("messaging.message.id", env.ID),
		attribute.String("headgate.kind", env.Kind),
		attribute.Int("headgate.attempt", env.Attempt+1),
		attribute.Int64("headgate.fence", c.Fence))
	if outcome != headgate.OutcomeSuccess {
		attrs = append(attrs, attribute.String("headgate.outcome", outcome.String()))
	}
	// A job without a partition or a rate class has no such attribute: most jobs have
	// neither, and a span's every attribute costs its copies.
	if env.PartitionKey != "" {
		attrs = append(attrs, attribute.String("headgate.partition", env.PartitionKey))
	}
	if env.RateClass != "" {
		attrs = append(attrs, attribute.String("headgate.rate_class", env.RateClass))
	}
	putAttrs(span, buf, attrs)
	if err != nil && (outcome == headgate.OutcomeRetry || outcome == headgate.OutcomeUndecodable) {
		msg := err.Error()
		if worker.IsPanic(err) {
			msg, _, _ = strings.Cut(msg, "\n")
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, msg)
	}
}

// attrPool holds the slices the spans' attributes are built in: a slice passed to an
// interface method escapes, and would cost each span an allocation.
var attrPool = sync.Pool{New: func() any {
	s := make([]attribute.KeyValue, 0, 8)
	return &s
}}

// putAttrs sets attrs, built in the pooled buf, on span, and returns buf to the pool:
// SetAttributes copies them.
func putAttrs(span trace.Span, buf *[]attribute.KeyValue, attrs []attribute.KeyValue) {
	span.SetAttributes(attrs...)
	clear(attrs)
	*buf = attrs[:0]
	attrPool.Put(buf)
}

// queueSpans is what the spans of one operation on one queue share: made once, since
// building the name and the options allocates.
type queueSpans struct {
	queue string
	name  string                  // "<operation> <queue>"
	start []trace.SpanStartOption // kind and the attributes a sampler sees
	root  []trace.SpanStartOption // start, as the root of a trace of its own
}

// spansOf returns the spans of the operation ("send" or "process") on queue, from the
// middleware's queues.
func spansOf(queues *sync.Map, op string, kind trace.SpanKind, queue string) *queueSpans {
	if q, ok := queues.Load(queue); ok {
		return q.(*queueSpans)
	}
	// The attributes the semantic conventions ask for at a span's start, for samplers.
	start := []trace.SpanStartOption{
		trace.WithSpanKind(kind),
		trace.WithAttributes(
			attribute.String("messaging.system", "headgate"),
			attribute.String("messaging.operation.type", op),
			attribute.String("messaging.operation.name", op),
			attribute.String("messaging.destination.name", queue),
		),
	}
	q, _ := queues.LoadOrStore(queue, &queueSpans{queue: queue, name: op + " " + queue, start: start,
		root: append(start[:len(start):len(start)], trace.WithNewRoot())})
	return q.(*queueSpans)
}

// hasTraceContext reports whether a job's tags carry a trace context (a traceparent
// tag), without parsing it.
func hasTraceContext(tags []string) bool {
	for _, t := range tags {
		if strings.HasPrefix(t, TraceparentTag) {
			return true
		}
	}
	return false
}

// producerOf is the producer's span context from a job's trace context tags. A
// traceparent of version 00 without a trace state, what EnqueueMiddleware writes, is
// parsed in place; anything else goes through the W3C propagator, which costs a context
// and a map.
func producerOf(tags []string) trace.SpanContext {
	tp, ts := "", false
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, TraceparentTag); ok {
			tp = v
		} else if strings.HasPrefix(t, TracestateTag) {
			ts = true
		}
	}
	if tp == "" {
		return trace.SpanContext{}
	}
	if !ts && len(tp) == 55 && tp[:3] == "00-" && tp[35] == '-' && tp[52] == '-' {
		tid, err1 := trace.TraceIDFromHex(tp[3:35])
		sid, err2 := trace.SpanIDFromHex(tp[36:52])
		flags, err3 := strconv.ParseUint(tp[53:], 16, 8)
		if err1 == nil && err2 == nil && err3 == nil && isLowerHex(tp[53:]) {
			return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
				TraceFlags: trace.TraceFlags(flags), Remote: true})
		}
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), tagCarrier(tags)))
}

// isLowerHex reports whether s is lowercase hex, as W3C trace context requires (the
// ID parsers check their part; the flags need it here).
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// tagCarrier reads the trace context tags of a job, in place: the propagator asks
// for two keys, and a map of them would cost each attempt an allocation.
type tagCarrier []string

func (c tagCarrier) Get(key string) string {
	prefix := TraceparentTag
	if key == "tracestate" {
		prefix = TracestateTag
	} else if key != "traceparent" {
		return ""
	}
	for _, t := range c {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}

func (tagCarrier) Set(string, string) {}

func (tagCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// withoutTraceTags drops trace context tags a job already has (a job enqueued again
// with tags copied from another), so that it carries one context.
func withoutTraceTags(tags []string) []string {
	out := tags[:0:0]
	for _, t := range tags {
		if !strings.HasPrefix(t, TraceparentTag) && !strings.HasPrefix(t, TracestateTag) {
			out = append(out, t)
		}
	}
	return out
}

func queueOf(env *headgate.Envelope) string {
	if env.Queue == "" {
		return headgate.QueueDefault
	}
	return env.Queue
}

// StartStep starts an INTERNAL span "step <name>" for one step of a job, a child of the
// span in ctx (the attempt's, under WorkerMiddleware), with the attribute headgate.step:
// a handler that checkpoints its steps calls it around each. Workflow steps need no
// call: WorkerMiddleware traces workflow tasks and their steps itself. The caller ends
// the span; an error it records sets the span's status to Error.
func StartStep(ctx context.Context, cfg *Config, name string) (context.Context, trace.Span) {
	return cfg.tracer().Start(ctx, "step "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("messaging.system", "headgate"), attribute.String("headgate.step", name)))
}

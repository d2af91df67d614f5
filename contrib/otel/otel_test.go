package headgateotel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type emailArgs struct {
	To string `msgpack:"to"`
}

func (emailArgs) Kind() string { return "email" }

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bundle is a producer and a worker of one namespace, traced into one in-memory exporter.
type bundle struct {
	exp    *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	client *rqueue.Client
	worker *worker.Worker
}

func setup(t *testing.T, child bool) *bundle {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	cfg := &headgateotel.Config{TracerProvider: tp, Child: child}
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "traced",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{headgateotel.EnqueueMiddleware(cfg)}})
	mustOK(t, err)
	w, err := worker.New(rdb, &worker.Config{Namespace: "traced", Queues: []string{"mail"},
		Middleware: []worker.Middleware{headgateotel.WorkerMiddleware(cfg)}})
	mustOK(t, err)
	worker.Handle(w, func(ctx context.Context, job *worker.Job[emailArgs]) error {
		// The handler's context carries the attempt's span.
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return worker.Skip("no span in the handler's context")
		}
		if job.Args.To == "steps" {
			_, span := headgateotel.StartStep(ctx, cfg, "charge")
			span.End()
		}
		if job.Args.To == "fail" {
			return errors.New("mailbox full")
		}
		return nil
	})
	return &bundle{exp: exp, tp: tp, client: client, worker: w}
}

func (b *bundle) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range b.exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (all: %v)", len(found), name, b.exp.GetSpans().Snapshots())
	}
	return found[0]
}

func attrs(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all %v)", s.Name, k, got[k], v, got)
		}
	}
}

// The producer's span is a child of the caller's; the worker's span is the root of its
// own trace, linked to the producer's span, with the messaging attributes.
func TestProducerAndWorkerSpansLinked(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx, parent := b.tp.Tracer("test").Start(context.Background(), "checkout")
	res, err := b.client.Enqueue(ctx, emailArgs{To: "ada"}, &rqueue.EnqueueOpts{Queue: "mail", Partition: "tenant-1",
		Tags: []string{"welcome"}, RateClass: "smtp"})
	mustOK(t, err)
	parent.End()
	attempts, err := b.worker.Work(context.Background(), 1)
	mustOK(t, err)
	if len(attempts) != 1 || attempts[0].Outcome != headgate.OutcomeSuccess {
		t.Fatalf("attempts %+v, want one success", attempts)
	}

	send := b.span(t, "send mail")
	if send.SpanKind != trace.SpanKindProducer {
		t.Errorf("send span kind %s, want producer", send.SpanKind)
	}
	if send.Parent.SpanID() != parent.SpanContext().SpanID() || send.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("send span's parent %s, want the caller's span %s", send.Parent.SpanID(), parent.SpanContext().SpanID())
	}
	checkAttrs(t, send, map[string]string{"messaging.system": "headgate", "messaging.destination.name": "mail",
		"messaging.operation.type": "send", "messaging.message.id": res.ID, "headgate.kind": "email"})

	process := b.span(t, "process mail")
	if process.SpanKind != trace.SpanKindConsumer {
		t.Errorf("process span kind %s, want consumer", process.SpanKind)
	}
	if process.Parent.IsValid() {
		t.Errorf("process span has parent %s, want a root linked to the producer", process.Parent.SpanID())
	}
	if len(process.Links) != 1 || process.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() ||
		process.Links[0].SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span links %+v, want one to the send span %s", process.Links, send.SpanContext.SpanID())
	}
	checkAttrs(t, process, map[string]string{"messaging.system": "headgate", "messaging.destination.name": "mail",
		"messaging.operation.type": "process", "messaging.operation.name": "process", "messaging.message.id": res.ID,
		"headgate.kind": "email", "headgate.partition": "tenant-1", "headgate.attempt": "1", "headgate.fence": "1",
		"headgate.rate_class": "smtp"})
	if process.Status.Code != codes.Unset {
		t.Errorf("process span status %v, want unset for a success", process.Status)
	}
	// A success has no outcome attribute: its status says it.
	if v, ok := attrs(process)["headgate.outcome"]; ok {
		t.Errorf("successful attempt's span has headgate.outcome %q", v)
	}
}

// An attempt of a job without a partition or a rate class that succeeds has at most
// eight attributes, the most the SDK deduplicates at a span's end without a map of its
// own; and its span is the root of a trace of its own, linked to the producer's, also
// when the context given to the worker carries a span.
func TestWorkerSpanOfPlainSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	_, err := b.client.Enqueue(context.Background(), emailArgs{To: "ada"}, &rqueue.EnqueueOpts{Queue: "mail"})
	mustOK(t, err)
	ctx, startup := b.tp.Tracer("test").Start(context.Background(), "startup")
	_, err = b.worker.Work(ctx, 1)
	mustOK(t, err)
	startup.End()
	send, process := b.span(t, "send mail"), b.span(t, "process mail")
	if n := len(process.Attributes); n > 8 {
		t.Errorf("process span of a plain success has %d attributes, want at most 8: %v", n, attrs(process))
	}
	if process.Parent.IsValid() {
		t.Errorf("process span's parent %s, want none (the worker context's span is %s)", process.Parent.SpanID(),
			startup.SpanContext().SpanID())
	}
	if len(process.Links) != 1 || process.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("process span links %+v, want one to the send span %s", process.Links, send.SpanContext.SpanID())
	}
}

func TestWorkerSpanChildOption(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	_, err := b.client.Enqueue(context.Background(), emailArgs{To: "fail"}, &rqueue.EnqueueOpts{Queue: "mail"})
	mustOK(t, err)
	_, err = b.worker.Work(context.Background(), 1)
	mustOK(t, err)
	send, process := b.span(t, "send mail"), b.span(t, "process mail")
	if process.Parent.SpanID() != send.SpanContext.SpanID() || process.SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span's parent %s in trace %s, want the send span %s of trace %s", process.Parent.SpanID(),
			process.SpanContext.TraceID(), send.SpanContext.SpanID(), send.SpanContext.TraceID())
	}
	if len(process.Links) != 0 {
		t.Errorf("child process span has links %+v", process.Links)
	}
	if process.Status.Code != codes.Error || process.Status.Description != "mailbox full" {
		t.Errorf("failed attempt's span status %+v, want Error mailbox full", process.Status)
	}
	checkAttrs(t, process, map[string]string{"headgate.outcome": "retry", "headgate.attempt": "1"})
	// The job has neither a partition nor a rate class: the span carries no empty one.
	for _, k := range []string{"headgate.partition", "headgate.rate_class"} {
		if v, ok := attrs(process)[k]; ok {
			t.Errorf("process span of a job without %s has it: %q", k, v)
		}
	}
}

func TestTraceContextTags(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	res, err := b.client.Enqueue(context.Background(), emailArgs{To: "x"}, &rqueue.EnqueueOpts{Queue: "mail",
		Tags: []string{"keep", headgateotel.TraceparentTag + "00-00000000000000000000000000000001-0000000000000001-01"}})
	mustOK(t, err)
	job, err := b.client.Store().GetJob(context.Background(), res.ID)
	mustOK(t, err)
	send := b.span(t, "send mail")
	want := headgateotel.TraceparentTag + "00-" + send.SpanContext.TraceID().String() + "-" + send.SpanContext.SpanID().String() + "-01"
	var trace []string
	for _, tag := range job.Tags {
		if strings.HasPrefix(tag, headgateotel.TraceparentTag) {
			trace = append(trace, tag)
		}
	}
	if len(trace) != 1 || trace[0] != want || !strings.Contains(strings.Join(job.Tags, " "), "keep") {
		t.Errorf("tags %q, want %q (the stale traceparent replaced) and keep", job.Tags, want)
	}
	// Redis keeps a hash whose values are all at most hash-max-listpack-value (64) bytes
	// compact; the trace tag alone must not cost a traced job that.
	if len(want) > 64 {
		t.Errorf("trace tag %q is %d bytes, more than 64", want, len(want))
	}

	// A batch gets one send span; every job carries its context.
	many, err := b.client.EnqueueMany(context.Background(), []rqueue.EnqueueParams{
		{Args: emailArgs{To: "a"}, Opts: &rqueue.EnqueueOpts{Queue: "mail"}},
		{Args: emailArgs{To: "b"}, Opts: &rqueue.EnqueueOpts{Queue: "mail"}},
	})
	mustOK(t, err)
	spans := b.exp.GetSpans()
	batch := spans[len(spans)-1]
	if got := attrs(batch)["messaging.batch.message_count"]; got != "2" {
		t.Errorf("batch span message count %q, want 2", got)
	}
	for _, r := range many {
		j, err := b.client.Store().GetJob(context.Background(), r.ID)
		mustOK(t, err)
		if !strings.Contains(strings.Join(j.Tags, " "), batch.SpanContext.SpanID().String()) {
			t.Errorf("job %s tags %q lack the batch span's context", r.ID, j.Tags)
		}
	}
}

// A step span started in a handler is a child of the attempt's span.
func TestStepSpanIsChildOfAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	_, err := b.client.Enqueue(context.Background(), emailArgs{To: "steps"}, &rqueue.EnqueueOpts{Queue: "mail"})
	mustOK(t, err)
	_, err = b.worker.Work(context.Background(), 1)
	mustOK(t, err)
	process, step := b.span(t, "process mail"), b.span(t, "step charge")
	if step.Parent.SpanID() != process.SpanContext.SpanID() || step.SpanKind != trace.SpanKindInternal {
		t.Errorf("step span parent %s kind %s, want the process span %s, internal", step.Parent.SpanID(), step.SpanKind,
			process.SpanContext.SpanID())
	}
	checkAttrs(t, step, map[string]string{"headgate.step": "charge"})
}

// alternate samples every other span it is asked about, starting with the first.
type alternate struct{ n atomic.Int64 }

func (a *alternate) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	d := sdktrace.Drop
	if a.n.Add(1)%2 == 1 {
		d = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{Decision: d, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (*alternate) Description() string { return "alternate" }

// The producer's trace context is read for the attempts a sampler records: each span
// exported links to the producer, and an attempt that is not sampled exports nothing.
// A trace context that does not parse links nothing, and an attempt whose worker
// context carries a span is then that span's child; a valid one makes it a root.
func TestWorkerSpanProducerContext(t *testing.T) {
	t.Parallel()
	const tid, sid = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(&alternate{}))
	var sampled []bool
	h := headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})(func(ctx context.Context, _ *headgate.Claim) error {
		sampled = append(sampled, trace.SpanContextFromContext(ctx).IsSampled())
		return nil
	})
	claim := func(tags ...string) *headgate.Claim {
		return &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "k", Queue: "q", Tags: tags}, Fence: 1}
	}
	valid := headgateotel.TraceparentTag + "00-" + tid + "-" + sid + "-01"
	for range 4 {
		mustOK(t, h(context.Background(), claim(valid)))
	}
	if !slices.Equal(sampled, []bool{true, false, true, false}) {
		t.Fatalf("attempts sampled %v, want every other one", sampled)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want the 2 sampled attempts'", len(spans))
	}
	for _, s := range spans {
		if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() != tid || s.Links[0].SpanContext.SpanID().String() != sid ||
			!s.Links[0].SpanContext.IsRemote() {
			t.Errorf("span links %+v, want one to the producer %s/%s", s.Links, tid, sid)
		}
	}

	exp.Reset()
	// The worker's context carries a span: a valid producer context makes the attempt a
	// root, a malformed one leaves it the worker's span's child, without a link.
	wctx, wspan := tp.Tracer("test").Start(context.Background(), "worker") // the alternation's fifth: sampled
	for _, tag := range []string{valid, headgateotel.TraceparentTag + "00-" + tid + "-" + sid + "-0G"} {
		mustOK(t, h(wctx, claim(tag)))
		mustOK(t, h(wctx, claim(tag))) // the other half of the alternation
	}
	wspan.End()
	var process []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "process q" {
			process = append(process, s)
		}
	}
	if len(process) != 2 {
		t.Fatalf("%d process spans exported, want 2", len(process))
	}
	if p := process[0]; p.Parent.IsValid() || len(p.Links) != 1 {
		t.Errorf("valid producer context: parent %v, links %+v; want a root with one link", p.Parent, p.Links)
	}
	if p := process[1]; p.Parent.SpanID() != wspan.SpanContext().SpanID() || len(p.Links) != 0 {
		t.Errorf("malformed producer context: parent %v, links %+v; want the worker span's child without links", p.Parent, p.Links)
	}
}

// A producer span that is not sampled writes no trace context into its jobs, unless
// PropagateUnsampled (or Child) asks for it: then the context travels, not sampled.
func TestUnsampledProducerContext(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	for _, tc := range []struct {
		name string
		cfg  headgateotel.Config
		want bool // a traceparent tag, not sampled
	}{
		{"default", headgateotel.Config{TracerProvider: tp}, false},
		{"PropagateUnsampled", headgateotel.Config{TracerProvider: tp, PropagateUnsampled: true}, true},
		{"Child", headgateotel.Config{TracerProvider: tp, Child: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "unsampled-" + tc.name,
				EnqueueMiddleware: []rqueue.EnqueueMiddleware{headgateotel.EnqueueMiddleware(&tc.cfg)}})
			mustOK(t, err)
			res, err := client.Enqueue(context.Background(), emailArgs{To: "x"}, &rqueue.EnqueueOpts{Tags: []string{"keep"}})
			mustOK(t, err)
			job, err := client.Store().GetJob(context.Background(), res.ID)
			mustOK(t, err)
			var trace []string
			for _, tag := range job.Tags {
				if strings.HasPrefix(tag, headgateotel.TraceparentTag) {
					trace = append(trace, tag)
				}
			}
			switch {
			case !slices.Contains(job.Tags, "keep"):
				t.Errorf("tags %q lost the job's own", job.Tags)
			case !tc.want && len(trace) != 0:
				t.Errorf("tags %q: an unsampled producer's context was written", job.Tags)
			case tc.want && (len(trace) != 1 || !strings.HasSuffix(trace[0], "-00")):
				t.Errorf("tags %q, want one traceparent, not sampled (flags 00)", job.Tags)
			}
		})
	}
}

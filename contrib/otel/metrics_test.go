package headgateotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

var epoch = time.UnixMilli(1_750_000_000_000)

// points collects reader's metrics as "name{k=v,...} value" lines, sorted.
func points(t *testing.T, reader *sdkmetric.ManualReader) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	mustOK(t, reader.Collect(context.Background(), &rm))
	var out []string
	line := func(name string, set attribute.Set, v any) {
		var kv []string
		for _, a := range set.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		out = append(out, fmt.Sprintf("%s{%s} %v", name, strings.Join(kv, ","), v))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					line(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					line(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					line(m.Name, p.Attributes, fmt.Sprintf("count=%d", p.Count))
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ObserveNamespace reads the same namespace state as headgateprom's collector and
// reports exact values: counts, the scripts' event counters, partition waits.
func TestObserveNamespaceExactValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "obs", CrashLimit: 1})
	mustOK(t, err)
	mustOK(t, s.FreezeClock(ctx, epoch))
	mustOK(t, s.SetEnqueueLimit(ctx, "small", 1))
	_, err = s.Enqueue(ctx,
		headgate.Envelope{ID: "a", Kind: "k", Queue: "small", PartitionKey: "acme", ScheduledAt: epoch.Add(-time.Minute)},
		headgate.Envelope{ID: "c", Kind: "k", Queue: "crashy", Fingerprint: "fp"})
	mustOK(t, err)
	if _, err := s.Enqueue(ctx, headgate.Envelope{ID: "b", Kind: "k", Queue: "small"}); !errors.As(err, new(*headgate.BackpressureError)) {
		t.Fatalf("enqueue over the limit: %v, want BackpressureError", err)
	}
	claims, err := s.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"crashy"}, Capacity: 1, Lease: time.Second})
	mustOK(t, err)
	mustOK(t, s.AdvanceClock(ctx, 2*time.Second))
	if rs, err := s.ReclaimExpired(ctx, 10); err != nil || len(rs) != 1 {
		t.Fatalf("reclaim: %+v, %v; want c quarantined", rs, err)
	}
	if _, err := s.Ack(ctx, claims[0].LeaseRef(), headgate.OutcomeSuccess, nil); !errors.As(err, new(*headgate.LeaseRejectedError)) {
		t.Fatalf("late ack: %v, want LeaseRejectedError", err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	reg, err := headgateotel.ObserveNamespace(rdb, &headgateotel.NamespaceConfig{
		MetricsConfig: headgateotel.MetricsConfig{MeterProvider: mp}, Namespace: "obs"})
	mustOK(t, err)
	got := points(t, reader)
	var want []string
	for _, q := range []string{"crashy", "small"} {
		for _, st := range headgate.States {
			n := 0
			if (q == "crashy" && st == headgate.StateQuarantined) || (q == "small" && st == headgate.StateAvailable) {
				n = 1
			}
			want = append(want, fmt.Sprintf("headgate.jobs{namespace=obs,queue=%s,state=%s} %d", q, st, n))
		}
	}
	want = append(want,
		"headgate.backpressure_rejections{namespace=obs,queue=small} 1",
		"headgate.lease_rejections{namespace=obs} 1",
		"headgate.partition.wait{namespace=obs,partition=acme,queue=small} 62",
		"headgate.quarantined_fingerprints{namespace=obs} 1",
		"headgate.queue.available_partitions{namespace=obs,queue=crashy} 0",
		"headgate.queue.available_partitions{namespace=obs,queue=small} 1",
		"headgate.queue.enqueue_limit{namespace=obs,queue=small} 1",
		"headgate.queue.oldest_available{namespace=obs,queue=crashy} 0",
		"headgate.queue.oldest_available{namespace=obs,queue=small} 62",
		"headgate.queue.paused{namespace=obs,queue=crashy} 0",
		"headgate.queue.paused{namespace=obs,queue=small} 0",
		"headgate.queue.unfinished_jobs{namespace=obs,queue=crashy} 0",
		"headgate.queue.unfinished_jobs{namespace=obs,queue=small} 1",
		"headgate.reclaims{namespace=obs} 1",
	)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mustOK(t, reg.Unregister())
	if got := points(t, reader); len(got) != 0 {
		t.Errorf("after Unregister: %v, want nothing read", got)
	}
	for name, cfg := range map[string]*headgateotel.NamespaceConfig{
		"NoNamespace":     {},
		"EmptyClass":      {Namespace: "n", RateClasses: []string{""}},
		"PartitionsBelow": {Namespace: "n", PartitionsPerQueue: -2},
		"NegativeTimeout": {Namespace: "n", ReadTimeout: -time.Second},
	} {
		if _, err := headgateotel.ObserveNamespace(rdb, cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The worker and enqueue instruments count attempts by outcome and jobs written, as
// headgateprom.Metrics does, through a real worker.
func TestMetricsMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	mustOK(t, err)
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "om",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{m.EnqueueMiddleware()}})
	mustOK(t, err)
	w, err := worker.New(rdb, &worker.Config{Namespace: "om", Queues: []string{"mail"},
		Middleware: []worker.Middleware{m.WorkerMiddleware(0)}})
	mustOK(t, err)
	worker.Handle(w, func(ctx context.Context, job *worker.Job[emailArgs]) error {
		if job.Args.To == "skip" {
			return worker.Skip("no such address")
		}
		return nil
	})
	for _, to := range []string{"ada", "bob", "skip"} {
		_, err := client.Enqueue(ctx, emailArgs{To: to}, &rqueue.EnqueueOpts{ID: to, Queue: "mail"})
		mustOK(t, err)
	}
	_, err = client.Enqueue(ctx, emailArgs{To: "ada"}, &rqueue.EnqueueOpts{ID: "ada", Queue: "mail"}) // a replay
	mustOK(t, err)
	// A batch of two queues, interleaved: each job is counted in its own.
	_, err = client.EnqueueMany(ctx, []rqueue.EnqueueParams{{Args: emailArgs{To: "a"}, Opts: &rqueue.EnqueueOpts{Queue: "other"}},
		{Args: emailArgs{To: "b"}}, {Args: emailArgs{To: "c"}, Opts: &rqueue.EnqueueOpts{Queue: "other"}}})
	mustOK(t, err)
	if attempts, err := w.Work(ctx, 3); err != nil || len(attempts) != 3 {
		t.Fatalf("work: %d attempts, %v; want 3", len(attempts), err)
	}
	want := []string{
		"headgate.job.run{kind=email,queue=mail} count=3",
		"headgate.job.wait{kind=email,queue=mail} count=3",
		"headgate.jobs.enqueued{kind=email,queue=default} 1",
		"headgate.jobs.enqueued{kind=email,queue=mail} 3",
		"headgate.jobs.enqueued{kind=email,queue=other} 2",
		"headgate.jobs.in_flight{kind=email,queue=mail} 0",
		"headgate.jobs.processed{kind=email,outcome=skip,queue=mail} 1",
		"headgate.jobs.processed{kind=email,outcome=success,queue=mail} 2",
	}
	if got := points(t, reader); !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// One kind's handler serves jobs of several queues: each attempt is recorded with its
// own queue, whichever queue the attempt before it had.
func TestMetricsKindAcrossQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	mustOK(t, err)
	h := m.WorkerMiddleware(0)(func(_ context.Context, c *headgate.Claim) error {
		if c.Envelope.ID == "skip" {
			return worker.Skip("no")
		}
		return nil
	})
	for _, a := range []struct{ id, queue string }{{"1", "a"}, {"2", "b"}, {"3", "a"}, {"skip", "a"}, {"4", "b"}, {"5", "a"}} {
		err := h(ctx, &headgate.Claim{Envelope: headgate.Envelope{ID: a.id, Kind: "k", Queue: a.queue}})
		if a.id != "skip" {
			mustOK(t, err)
		}
	}
	want := []string{
		"headgate.job.run{kind=k,queue=a} count=4",
		"headgate.job.run{kind=k,queue=b} count=2",
		"headgate.jobs.in_flight{kind=k,queue=a} 0",
		"headgate.jobs.in_flight{kind=k,queue=b} 0",
		"headgate.jobs.processed{kind=k,outcome=skip,queue=a} 1",
		"headgate.jobs.processed{kind=k,outcome=success,queue=a} 3",
		"headgate.jobs.processed{kind=k,outcome=success,queue=b} 2",
	}
	if got := points(t, reader); !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// headgate.jobs.in_flight counts the attempts running at the collection, by queue and
// kind, and headgate.jobs.processed the attempts ended, summed over the Metrics of one
// meter provider.
func TestMetricsAsyncCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	m1, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	mustOK(t, err)
	m2, err := headgateotel.NewMetrics(&headgateotel.MetricsConfig{MeterProvider: mp})
	mustOK(t, err)
	inFlight := func() []string {
		var out []string
		for _, p := range points(t, reader) {
			if strings.HasPrefix(p, "headgate.jobs.in_flight") {
				out = append(out, p)
			}
		}
		return out
	}
	// The handlers collect while they run: the attempts around them are in flight.
	var during [][]string
	inner := m2.WorkerMiddleware(0)(func(context.Context, *headgate.Claim) error {
		during = append(during, inFlight())
		return nil
	})
	outer := m1.WorkerMiddleware(0)(func(ctx context.Context, c *headgate.Claim) error {
		during = append(during, inFlight())
		if c.Envelope.ID == "fail" {
			return errors.New("boom")
		}
		return inner(ctx, &headgate.Claim{Envelope: headgate.Envelope{ID: "i", Kind: "k", Queue: "a"}})
	})
	mustOK(t, outer(ctx, &headgate.Claim{Envelope: headgate.Envelope{ID: "o", Kind: "k", Queue: "a"}}))
	if err := outer(ctx, &headgate.Claim{Envelope: headgate.Envelope{ID: "fail", Kind: "k", Queue: "b"}}); err == nil {
		t.Fatal("the failing attempt returned no error")
	}
	want := [][]string{
		{"headgate.jobs.in_flight{kind=k,queue=a} 1"},
		{"headgate.jobs.in_flight{kind=k,queue=a} 2"},
		{"headgate.jobs.in_flight{kind=k,queue=a} 0", "headgate.jobs.in_flight{kind=k,queue=b} 1"},
	}
	if !slices.EqualFunc(during, want, slices.Equal) {
		t.Errorf("in flight during the attempts: %q, want %q", during, want)
	}
	if got, want := inFlight(), []string{"headgate.jobs.in_flight{kind=k,queue=a} 0",
		"headgate.jobs.in_flight{kind=k,queue=b} 0"}; !slices.Equal(got, want) {
		t.Errorf("in flight after the attempts: %q, want %q", got, want)
	}
	// The attempts ended are counted the same way, summed over the two Metrics, and both
	// instruments are exported as sums: processed monotonic, in_flight not.
	var rm metricdata.ResourceMetrics
	mustOK(t, reader.Collect(ctx, &rm))
	var processed []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			switch m.Name {
			case "headgate.jobs.processed":
				if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: %#v, want a monotonic cumulative sum", m.Name, m.Data)
					continue
				}
				for _, p := range sum.DataPoints {
					o, _ := p.Attributes.Value("outcome")
					q, _ := p.Attributes.Value("queue")
					processed = append(processed, fmt.Sprintf("%s/%s %d", q.Emit(), o.Emit(), p.Value))
				}
			case "headgate.jobs.in_flight":
				if !ok || sum.IsMonotonic {
					t.Errorf("%s: %#v, want a sum that is not monotonic", m.Name, m.Data)
				}
			}
		}
	}
	sort.Strings(processed)
	if want := []string{"a/success 2", "b/retry 1"}; !slices.Equal(processed, want) {
		t.Errorf("processed %q, want %q", processed, want)
	}
}

package headgateprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

type emailArgs struct {
	To string `msgpack:"to"`
}

func (emailArgs) Kind() string { return "email" }

// sampleCount returns the observations of the histogram name with the given labels.
func sampleCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	mustOK(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metrics
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// The worker middleware counts attempts by outcome and measures the wait on the store
// clock: jobs enqueued at the frozen epoch and admitted 3s later waited 3s each.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	rdb, _ := newRedis(t)
	s := newStore(t, rdb, "wm")
	m := headgateprom.NewMetrics(&headgateprom.MetricsConfig{Buckets: []float64{1, 5}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	const lease = 10 * time.Second
	ctx := context.Background()
	for _, to := range []string{"ok1", "ok2", "fail", "skip", "panic"} {
		payload, err := msgpack.Marshal(emailArgs{To: to})
		mustOK(t, err)
		_, err = s.Enqueue(ctx, headgate.Envelope{ID: to, Kind: "email", Queue: "mail", Payload: payload})
		mustOK(t, err)
	}
	_, err := s.Enqueue(ctx, headgate.Envelope{ID: "unknown", Kind: "sms", Queue: "mail"})
	mustOK(t, err)
	mustOK(t, s.AdvanceClock(ctx, 3*time.Second))
	w, err := worker.New(rdb, &worker.Config{Namespace: "wm", Queues: []string{"mail"}, Lease: lease,
		Middleware: []worker.Middleware{m.WorkerMiddleware(lease)}})
	mustOK(t, err)
	worker.Handle(w, func(ctx context.Context, job *worker.Job[emailArgs]) error {
		switch job.Args.To {
		case "fail":
			return errors.New("mailbox full")
		case "skip":
			return worker.Skip("no such user")
		case "panic":
			panic("bug")
		}
		return nil
	})
	attempts, err := w.Work(ctx, 10)
	mustOK(t, err)
	if len(attempts) != 6 {
		t.Fatalf("%d attempts, want 6", len(attempts))
	}
	want := `
# HELP headgate_jobs_processed_total Attempts ended, by outcome.
# TYPE headgate_jobs_processed_total counter
headgate_jobs_processed_total{kind="email",outcome="retry",queue="mail"} 2
headgate_jobs_processed_total{kind="email",outcome="skip",queue="mail"} 1
headgate_jobs_processed_total{kind="email",outcome="success",queue="mail"} 2
headgate_jobs_processed_total{kind="sms",outcome="retry",queue="mail"} 1
# HELP headgate_job_wait_seconds Time from when a job was due to its admission, on the store clock.
# TYPE headgate_job_wait_seconds histogram
headgate_job_wait_seconds_bucket{kind="email",queue="mail",le="1"} 0
headgate_job_wait_seconds_bucket{kind="email",queue="mail",le="5"} 5
headgate_job_wait_seconds_bucket{kind="email",queue="mail",le="+Inf"} 5
headgate_job_wait_seconds_sum{kind="email",queue="mail"} 15
headgate_job_wait_seconds_count{kind="email",queue="mail"} 5
headgate_job_wait_seconds_bucket{kind="sms",queue="mail",le="1"} 0
headgate_job_wait_seconds_bucket{kind="sms",queue="mail",le="5"} 1
headgate_job_wait_seconds_bucket{kind="sms",queue="mail",le="+Inf"} 1
headgate_job_wait_seconds_sum{kind="sms",queue="mail"} 3
headgate_job_wait_seconds_count{kind="sms",queue="mail"} 1
# HELP headgate_jobs_in_flight Attempts running in this process.
# TYPE headgate_jobs_in_flight gauge
headgate_jobs_in_flight 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"headgate_jobs_processed_total", "headgate_job_wait_seconds", "headgate_jobs_in_flight"); err != nil {
		t.Error(err)
	}
	if n := sampleCount(t, reg, "headgate_job_run_seconds", map[string]string{"kind": "email"}); n != 5 {
		t.Errorf("run time observed %d times for email, want 5", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	mustOK(t, err)
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// An attempt whose lease was lost while it ran is counted as lease_lost, whatever the
// handler returned, and in headgate_leases_lost_total; one running shows in flight.
func TestWorkerMetricsLeaseLostAndInFlight(t *testing.T) {
	t.Parallel()
	m := headgateprom.NewMetrics(nil)
	inside := make(chan struct{})
	release := make(chan struct{})
	h := m.WorkerMiddleware(0)(func(ctx context.Context, c *headgate.Claim) error {
		close(inside)
		<-release
		return ctx.Err()
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error)
	go func() {
		done <- h(ctx, &headgate.Claim{Envelope: headgate.Envelope{ID: "j", Kind: "k", Queue: "q"}})
	}()
	<-inside
	if v := testutil.ToFloat64(gaugeOf(t, m, "headgate_jobs_in_flight")); v != 1 {
		t.Errorf("in flight while running = %v, want 1", v)
	}
	cancel(worker.ErrLeaseLost)
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not return")
	}
	want := `
# HELP headgate_jobs_processed_total Attempts ended, by outcome.
# TYPE headgate_jobs_processed_total counter
headgate_jobs_processed_total{kind="k",outcome="lease_lost",queue="q"} 1
# HELP headgate_leases_lost_total Attempts whose lease was lost while they ran (expired and reclaimed, or the job deleted).
# TYPE headgate_leases_lost_total counter
headgate_leases_lost_total{kind="k",queue="q"} 1
# HELP headgate_jobs_in_flight Attempts running in this process.
# TYPE headgate_jobs_in_flight gauge
headgate_jobs_in_flight 0
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want),
		"headgate_jobs_processed_total", "headgate_leases_lost_total", "headgate_jobs_in_flight"); err != nil {
		t.Error(err)
	}
}

// gaugeOf returns the collector of one metric of m, for testutil.ToFloat64.
func gaugeOf(t *testing.T, m *headgateprom.Metrics, name string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mc := make(chan prometheus.Metric, 100)
		m.Collect(mc)
		close(mc)
		for x := range mc {
			if strings.Contains(x.Desc().String(), `"`+name+`"`) {
				ch <- x
			}
		}
	})
}

type collectorFunc func(ch chan<- prometheus.Metric)

func (f collectorFunc) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// The enqueue middleware counts jobs written, not replays nor the batches a queue's
// limit refused.
func TestEnqueueMetrics(t *testing.T) {
	t.Parallel()
	rdb, _ := newRedis(t)
	m := headgateprom.NewMetrics(nil)
	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "em",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{m.EnqueueMiddleware()}})
	mustOK(t, err)
	ctx := context.Background()
	mustOK(t, client.Store().SetEnqueueLimit(ctx, "small", 2))
	for _, id := range []string{"a", "b", "a"} { // the second "a" is a replay
		_, err := client.Enqueue(ctx, emailArgs{To: id}, &rqueue.EnqueueOpts{ID: id, Queue: "small"})
		mustOK(t, err)
	}
	_, err = client.Enqueue(ctx, emailArgs{To: "c"}, &rqueue.EnqueueOpts{Queue: "small"})
	var bp *headgate.BackpressureError
	if !errors.As(err, &bp) {
		t.Fatalf("third job: %v, want backpressure", err)
	}
	// A batch of two queues, interleaved: each job is counted in its own.
	_, err = client.EnqueueMany(ctx, []rqueue.EnqueueParams{{Args: emailArgs{To: "d"}},
		{Args: emailArgs{To: "e"}, Opts: &rqueue.EnqueueOpts{Queue: "other"}}, {Args: emailArgs{To: "f"}}})
	mustOK(t, err)
	want := `
# HELP headgate_jobs_enqueued_total Jobs written by enqueues; replays and duplicates are not counted.
# TYPE headgate_jobs_enqueued_total counter
headgate_jobs_enqueued_total{kind="email",queue="default"} 2
headgate_jobs_enqueued_total{kind="email",queue="other"} 1
headgate_jobs_enqueued_total{kind="email",queue="small"} 2
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "headgate_jobs_enqueued_total"); err != nil {
		t.Error(err)
	}
}

// One kind's handler serves jobs of several queues: each attempt is counted in its own
// queue's series, whichever queue the attempt before it had.
func TestWorkerMetricsKindAcrossQueues(t *testing.T) {
	t.Parallel()
	m := headgateprom.NewMetrics(nil)
	h := m.WorkerMiddleware(0)(func(_ context.Context, c *headgate.Claim) error {
		if c.Envelope.ID == "skip" {
			return worker.Skip("no")
		}
		return nil
	})
	for _, a := range []struct{ id, queue string }{{"1", "a"}, {"2", "b"}, {"3", "a"}, {"skip", "a"}, {"4", "b"}, {"5", "a"}} {
		err := h(context.Background(), &headgate.Claim{Envelope: headgate.Envelope{ID: a.id, Kind: "k", Queue: a.queue}})
		if a.id != "skip" {
			mustOK(t, err)
		}
	}
	want := `
# HELP headgate_jobs_processed_total Attempts ended, by outcome.
# TYPE headgate_jobs_processed_total counter
headgate_jobs_processed_total{kind="k",outcome="skip",queue="a"} 1
headgate_jobs_processed_total{kind="k",outcome="success",queue="a"} 3
headgate_jobs_processed_total{kind="k",outcome="success",queue="b"} 2
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "headgate_jobs_processed_total"); err != nil {
		t.Error(err)
	}
}

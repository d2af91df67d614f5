package headgateprom

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// MetricsConfig configures Metrics.
type MetricsConfig struct {
	// Buckets are the histograms' upper bounds in seconds.
	// Defaults to prometheus.DefBuckets (5ms to 10s).
	Buckets []float64
	// ConstLabels are added to every metric, for example {"namespace": "billing"} when
	// one process serves several namespaces. Defaults to none.
	ConstLabels prometheus.Labels
}

// Metrics are the instruments of workers and producers. Register it on a
// prometheus.Registerer, then pass WorkerMiddleware to worker.Config.Middleware and
// EnqueueMiddleware to rqueue.Config.EnqueueMiddleware. One Metrics may serve several
// workers and clients of a process.
type Metrics struct {
	processed  *prometheus.CounterVec
	run        *prometheus.HistogramVec
	wait       *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	leasesLost *prometheus.CounterVec
	enqueued   *prometheus.CounterVec

	mu     sync.RWMutex
	series map[seriesKey]*series
}

type seriesKey struct{ queue, kind string }

// series are the instruments of one queue and kind, looked up once: an attempt then
// pays no label hashing.
type series struct {
	queue, kind string
	run, wait   prometheus.Observer
	// succeeded is processed of the outcome success, the usual one, once counted (a
	// series is exported from its first count on).
	succeeded atomic.Pointer[prometheus.Counter]
	processed map[string]prometheus.Counter // by outcome label; guarded by Metrics.mu
}

func (m *Metrics) seriesOf(queue, kind string) *series {
	m.mu.RLock()
	s := m.series[seriesKey{queue, kind}]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.series[seriesKey{queue, kind}]; s == nil {
		s = &series{queue: queue, kind: kind, run: m.run.WithLabelValues(queue, kind), wait: m.wait.WithLabelValues(queue, kind),
			processed: map[string]prometheus.Counter{}}
		m.series[seriesKey{queue, kind}] = s
	}
	return s
}

func (m *Metrics) countProcessed(s *series, outcome string) {
	success := outcome == headgate.OutcomeSuccess.String()
	if c := s.succeeded.Load(); success && c != nil {
		(*c).Inc()
		return
	}
	m.mu.RLock()
	c := s.processed[outcome]
	m.mu.RUnlock()
	if c == nil {
		m.mu.Lock()
		if c = s.processed[outcome]; c == nil {
			c = m.processed.WithLabelValues(s.queue, s.kind, outcome)
			s.processed[outcome] = c
		}
		m.mu.Unlock()
	}
	if success {
		s.succeeded.Store(&c)
	}
	c.Inc()
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the instruments, not registered yet.
func NewMetrics(cfg *MetricsConfig) *Metrics {
	if cfg == nil {
		cfg = &MetricsConfig{}
	}
	buckets := prometheus.DefBuckets
	if len(cfg.Buckets) > 0 {
		buckets = cfg.Buckets
	}
	l := cfg.ConstLabels
	return &Metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "headgate_jobs_processed_total",
			Help: "Attempts ended, by outcome.", ConstLabels: l}, []string{"queue", "kind", "outcome"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "headgate_job_run_seconds",
			Help: "Time an attempt's handler ran.", Buckets: buckets, ConstLabels: l}, []string{"queue", "kind"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "headgate_job_wait_seconds",
			Help: "Time from when a job was due to its admission, on the store clock.", Buckets: buckets, ConstLabels: l},
			[]string{"queue", "kind"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "headgate_jobs_in_flight",
			Help: "Attempts running in this process.", ConstLabels: l}),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "headgate_leases_lost_total",
			Help: "Attempts whose lease was lost while they ran (expired and reclaimed, or the job deleted).", ConstLabels: l},
			[]string{"queue", "kind"}),
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "headgate_jobs_enqueued_total",
			Help: "Jobs written by enqueues; replays and duplicates are not counted.", ConstLabels: l}, []string{"queue", "kind"}),
		series: map[seriesKey]*series{},
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.processed, m.run, m.wait, m.inFlight, m.leasesLost, m.enqueued}
}

// Describe sends the descriptors of every instrument.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect sends every instrument's current values.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// WorkerMiddleware returns the worker middleware that records attempts. lease is the
// worker's Config.Lease (zero means worker.LeaseDefault): the wait is measured on the
// store clock, from the job's due time to its admission, which is the claim's lease
// expiry less the lease. Put it first in Config.Middleware so that it times the other
// middleware too and sees the outcome they make.
func (m *Metrics) WorkerMiddleware(lease time.Duration) worker.Middleware {
	lease = cmp.Or(lease, worker.LeaseDefault)
	return func(next worker.HandlerFunc) worker.HandlerFunc {
		// The worker wraps each kind's handler apart, so an attempt's series is nearly
		// always the last attempt's: kept here, it spares the attempt the lookup and
		// the shared lock.
		var last atomic.Pointer[series]
		return func(ctx context.Context, c *headgate.Claim) error {
			env := &c.Envelope
			s := last.Load()
			if s == nil || s.queue != env.Queue || s.kind != env.Kind {
				s = m.seriesOf(env.Queue, env.Kind)
				last.Store(s)
			}
			if !env.ScheduledAt.IsZero() && !c.ExpiresAt.IsZero() {
				wait := c.ExpiresAt.Add(-lease).Sub(env.ScheduledAt)
				s.wait.Observe(max(wait, 0).Seconds())
			}
			m.inFlight.Inc()
			start := time.Now()
			err := next(ctx, c)
			s.run.Observe(time.Since(start).Seconds())
			m.inFlight.Dec()
			m.countProcessed(s, m.outcome(ctx, env, err))
			return err
		}
	}
}

// outcome is the outcome label of an attempt (worker.OutcomeLabel); a lost lease is
// also counted in headgate_leases_lost_total.
func (m *Metrics) outcome(ctx context.Context, env *headgate.Envelope, err error) string {
	label := worker.OutcomeLabel(ctx, err)
	if label == headgate.OutcomeLeaseLost.String() {
		m.leasesLost.WithLabelValues(env.Queue, env.Kind).Inc()
	}
	return label
}

// EnqueueMiddleware returns the enqueue middleware that counts jobs written. Refusals
// by backpressure are counted fleet-wide by the scripts (Collector).
func (m *Metrics) EnqueueMiddleware() rqueue.EnqueueMiddleware {
	return func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
		return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
			res, err := next(ctx, envs)
			// A batch is mostly runs of one queue and kind: counted a run at a time, it
			// pays the label lookup once per run and not per job.
			written := rqueue.Written(envs, res, err)
			for i := 0; i < len(written); {
				queue, kind := cmp.Or(envs[written[i]].Queue, headgate.QueueDefault), envs[written[i]].Kind
				n := 1
				for ; i+n < len(written); n++ {
					e := &envs[written[i+n]]
					if e.Kind != kind || cmp.Or(e.Queue, headgate.QueueDefault) != queue {
						break
					}
				}
				m.enqueued.WithLabelValues(queue, kind).Add(float64(n))
				i += n
			}
			return res, err
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

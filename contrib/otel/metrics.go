package headgateotel

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// MetricsConfig configures Metrics and ObserveNamespace.
type MetricsConfig struct {
	// MeterProvider makes the meter. Defaults to otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

func (c *MetricsConfig) meter() metric.Meter {
	mp := metric.MeterProvider(nil)
	if c != nil {
		mp = c.MeterProvider
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(instrumentation)
}

// Metrics are the instruments of workers and producers, the OpenTelemetry twins of
// headgateprom.Metrics: pass WorkerMiddleware to worker.Config.Middleware and
// EnqueueMiddleware to rqueue.Config.EnqueueMiddleware. One Metrics may serve several
// workers and clients of a process. headgate.jobs.processed and headgate.jobs.in_flight
// are asynchronous (a counter and an up-down counter), whose callback NewMetrics
// registers on the meter for as long as its provider lives: make one Metrics per
// provider, not one per worker started and stopped.
type Metrics struct {
	leasesLost, enqueued metric.Int64Counter
	run, wait            metric.Float64Histogram

	mu        sync.RWMutex
	attrs     map[attrKey]metric.MeasurementOption // queue, kind (and outcome) attributes, built once
	processed map[attrKey]*count                   // by queue, kind and outcome
	inFlight  map[attrKey]*count                   // by queue and kind
}

type attrKey struct{ queue, kind, outcome string }

// count is the value of one series of an asynchronous instrument, observed at each
// collection: an attempt adds to it with an atomic add, where a synchronous
// instrument's measurement would cost the SDK an attribute set's lookup and
// normalization (about 2k instructions each, three of an attempt's five).
type count struct {
	n    atomic.Int64
	opts []metric.ObserveOption // the series' attributes
}

// kindAttrs are what one queue and kind's attempts record with: the options as the
// variadic arguments of Record and Add, built once, since a slice made at the call
// escapes and would cost each measurement an allocation; and their counts.
type kindAttrs struct {
	queue, kind string
	record      []metric.RecordOption // the queue and kind
	lost        []metric.AddOption    // the queue and kind
	inFlight    *count
	// succeeded is processed of the outcome success, set at the first success: a series
	// is exported from its first count on, as a synchronous counter's would be.
	succeeded atomic.Pointer[count]
}

// NewMetrics creates the instruments on cfg's meter.
func NewMetrics(cfg *MetricsConfig) (*Metrics, error) {
	meter := cfg.meter()
	m := &Metrics{attrs: map[attrKey]metric.MeasurementOption{}, processed: map[attrKey]*count{},
		inFlight: map[attrKey]*count{}}
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		c, e := meter.Int64Counter(name, metric.WithDescription(desc))
		err = cmp.Or(err, e)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, e := meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"))
		err = cmp.Or(err, e)
		return h
	}
	m.leasesLost = counter("headgate.leases.lost",
		"Attempts whose lease was lost while they ran (expired and reclaimed, or the job deleted).")
	m.enqueued = counter("headgate.jobs.enqueued", "Jobs written by enqueues; replays and duplicates are not counted.")
	m.run = histogram("headgate.job.run", "Time an attempt's handler ran.")
	m.wait = histogram("headgate.job.wait", "Time from when a job was due to its admission, on the store clock.")
	processed, e := meter.Int64ObservableCounter("headgate.jobs.processed", metric.WithDescription("Attempts ended, by outcome."))
	err = cmp.Or(err, e)
	inFlight, e := meter.Int64ObservableUpDownCounter("headgate.jobs.in_flight", metric.WithDescription("Attempts running in this process."))
	if err = cmp.Or(err, e); err != nil {
		return nil, err
	}
	// A callback registered with the instrument is the first Metrics' only, when several
	// share a meter: each registers its own, and the SDK sums what they observe.
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.mu.RLock()
		defer m.mu.RUnlock()
		for _, c := range m.processed {
			o.ObserveInt64(processed, c.n.Load(), c.opts...)
		}
		for _, c := range m.inFlight {
			o.ObserveInt64(inFlight, c.n.Load(), c.opts...)
		}
		return nil
	}, processed, inFlight); err != nil {
		return nil, err
	}
	return m, nil
}

// attrsOf returns the attribute set of a queue, kind and outcome ("" for none), made once.
func (m *Metrics) attrsOf(queue, kind, outcome string) metric.MeasurementOption {
	k := attrKey{queue, kind, outcome}
	m.mu.RLock()
	a := m.attrs[k]
	m.mu.RUnlock()
	if a != nil {
		return a
	}
	kvs := []attribute.KeyValue{attribute.String("queue", queue), attribute.String("kind", kind)}
	if outcome != "" {
		kvs = append(kvs, attribute.String("outcome", outcome))
	}
	a = metric.WithAttributeSet(attribute.NewSet(kvs...))
	m.mu.Lock()
	m.attrs[k] = a
	m.mu.Unlock()
	return a
}

// countOf returns the count of a queue, kind and outcome in counts (m.processed or
// m.inFlight), made at its first use.
func (m *Metrics) countOf(counts map[attrKey]*count, queue, kind, outcome string) *count {
	k := attrKey{queue, kind, outcome}
	m.mu.RLock()
	c := counts[k]
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	attrs := m.attrsOf(queue, kind, outcome)
	m.mu.Lock()
	defer m.mu.Unlock()
	if c = counts[k]; c == nil {
		c = &count{opts: []metric.ObserveOption{attrs}}
		counts[k] = c
	}
	return c
}

// WorkerMiddleware returns the worker middleware that records attempts, as
// headgateprom.Metrics.WorkerMiddleware does. lease is the worker's Config.Lease (zero
// means worker.LeaseDefault).
func (m *Metrics) WorkerMiddleware(lease time.Duration) worker.Middleware {
	lease = cmp.Or(lease, worker.LeaseDefault)
	return func(next worker.HandlerFunc) worker.HandlerFunc {
		// The worker wraps each kind's handler apart, so an attempt's attributes are
		// nearly always the last attempt's: kept here, they spare the attempt two
		// lookups and the shared lock.
		var last atomic.Pointer[kindAttrs]
		return func(ctx context.Context, c *headgate.Claim) error {
			env := &c.Envelope
			queue := queueOf(env)
			k := last.Load()
			if k == nil || k.queue != queue || k.kind != env.Kind {
				attrs := m.attrsOf(queue, env.Kind, "")
				k = &kindAttrs{queue: queue, kind: env.Kind, record: []metric.RecordOption{attrs},
					lost: []metric.AddOption{attrs}, inFlight: m.countOf(m.inFlight, queue, env.Kind, "")}
				last.Store(k)
			}
			if !env.ScheduledAt.IsZero() && !c.ExpiresAt.IsZero() {
				wait := c.ExpiresAt.Add(-lease).Sub(env.ScheduledAt)
				m.wait.Record(ctx, max(wait, 0).Seconds(), k.record...)
			}
			k.inFlight.n.Add(1)
			start := time.Now()
			err := next(ctx, c)
			elapsed := time.Since(start)
			k.inFlight.n.Add(-1)
			// The attempt's context may be cancelled by now: record on one that is not
			// (a new one only then, since it costs an allocation).
			rec := ctx
			if ctx.Err() != nil {
				rec = context.WithoutCancel(ctx)
			}
			m.run.Record(rec, elapsed.Seconds(), k.record...)
			outcome := worker.OutcomeLabel(ctx, err)
			if outcome == headgate.OutcomeLeaseLost.String() {
				m.leasesLost.Add(rec, 1, k.lost...)
			}
			if outcome != headgate.OutcomeSuccess.String() {
				m.countOf(m.processed, queue, env.Kind, outcome).n.Add(1)
				return err
			}
			done := k.succeeded.Load()
			if done == nil {
				done = m.countOf(m.processed, queue, env.Kind, outcome)
				k.succeeded.Store(done)
			}
			done.n.Add(1)
			return err
		}
	}
}

// EnqueueMiddleware returns the enqueue middleware that counts jobs written.
func (m *Metrics) EnqueueMiddleware() rqueue.EnqueueMiddleware {
	return func(next rqueue.EnqueueFunc) rqueue.EnqueueFunc {
		return func(ctx context.Context, envs []headgate.Envelope) ([]headgate.EnqueueResult, error) {
			res, err := next(ctx, envs)
			// A batch is mostly runs of one queue and kind: counted a run at a time, it
			// pays the attributes' lookup once per run and not per job.
			written := rqueue.Written(envs, res, err)
			for i := 0; i < len(written); {
				queue, kind := queueOf(&envs[written[i]]), envs[written[i]].Kind
				n := 1
				for ; i+n < len(written); n++ {
					e := &envs[written[i+n]]
					if e.Kind != kind || queueOf(e) != queue {
						break
					}
				}
				m.enqueued.Add(ctx, int64(n), m.attrsOf(queue, kind, ""))
				i += n
			}
			return res, err
		}
	}
}

// NamespaceConfig selects what ObserveNamespace reads.
type NamespaceConfig struct {
	MetricsConfig
	// Namespace is the store namespace to observe. Required.
	Namespace string
	// RateClasses are the rate classes whose tokens are observed. Defaults to none.
	RateClasses []string
	// PartitionsPerQueue is how many partitions of each queue have their wait observed,
	// the first ones of the admission ring; -1 observes none. Defaults to 10.
	PartitionsPerQueue int
	// ReadTimeout bounds the Redis reads of one collection. Defaults to 5s.
	ReadTimeout time.Duration
}

// ObserveNamespace registers observable instruments of one namespace's state, the
// OpenTelemetry twins of headgateprom.Collector, read once per collection with
// Store.Gauges (plain reads, a number of commands constant in the number of jobs). The
// _total counters of the Prometheus names are monotonic observable counters here. The
// returned registration's Unregister stops the reads.
func ObserveNamespace(rdb redis.UniversalClient, cfg *NamespaceConfig) (metric.Registration, error) {
	if rdb == nil {
		return nil, errors.New("headgateotel: ObserveNamespace needs a Redis client")
	}
	if cfg == nil {
		cfg = &NamespaceConfig{}
	}
	if cfg.PartitionsPerQueue < -1 || cfg.PartitionsPerQueue > 1000 {
		return nil, &headgate.InvalidError{Field: "NamespaceConfig.PartitionsPerQueue", Reason: "is outside -1..1000"}
	}
	if cfg.ReadTimeout < 0 {
		return nil, &headgate.InvalidError{Field: "NamespaceConfig.ReadTimeout", Reason: "cannot be negative"}
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	opts := headgate.GaugesOptions{RateClasses: append([]string(nil), cfg.RateClasses...),
		Partitions: max(cmp.Or(cfg.PartitionsPerQueue, 10), 0)}
	for _, c := range opts.RateClasses {
		if c == "" {
			return nil, &headgate.InvalidError{Field: "NamespaceConfig.RateClasses", Reason: "has an empty name"}
		}
	}
	timeout := cmp.Or(cfg.ReadTimeout, 5*time.Second)
	meter := cfg.meter()
	var errs []error
	gauge := func(name, desc, unit string) metric.Float64ObservableGauge {
		o := []metric.Float64ObservableGaugeOption{metric.WithDescription(desc)}
		if unit != "" {
			o = append(o, metric.WithUnit(unit))
		}
		g, err := meter.Float64ObservableGauge(name, o...)
		errs = append(errs, err)
		return g
	}
	counter := func(name, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	jobs := gauge("headgate.jobs", "Jobs by queue and state.", "")
	unfinished := gauge("headgate.queue.unfinished_jobs", "Jobs of the queue not yet terminal (what an enqueue limit bounds).", "")
	paused := gauge("headgate.queue.paused", "1 while the queue is paused, else 0.", "")
	limit := gauge("headgate.queue.enqueue_limit", "The queue's enqueue limit (absent when unbounded).", "")
	quarantined := gauge("headgate.quarantined_fingerprints", "Fingerprints in quarantine, waiting for an operator.", "")
	tokens := gauge("headgate.rate_class.tokens", "Tokens the rate class holds at the store time of the read.", "")
	partitions := gauge("headgate.queue.available_partitions", "Partitions of the queue with available work (not pinned to a worker).", "")
	oldest := gauge("headgate.queue.oldest_available", "Longest wait since due of the next job of the partitions read.", "s")
	partitionWait := gauge("headgate.partition.wait", "Time since the partition's next job was due, for the queue's next partitions in turn order.", "s")
	leaseRejections := counter("headgate.lease_rejections", "Writes of workers refused because they no longer held the lease.")
	reclaims := counter("headgate.reclaims", "Jobs taken back after their lease expired.")
	rateLimited := counter("headgate.rate_limited", "Jobs admission set aside because their rate class lacked the tokens.")
	backpressure := counter("headgate.backpressure_rejections", "Enqueue calls refused because the queue was at its enqueue limit.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ns := attribute.String("namespace", cfg.Namespace)
	with := func(kvs ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributes(append(kvs, ns)...)
	}
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		read := opts
		g, err := store.Gauges(ctx, &read)
		if err != nil {
			return err
		}
		for _, q := range g.Queues {
			queue := attribute.String("queue", q.Queue)
			for _, st := range headgate.States {
				o.ObserveFloat64(jobs, float64(q.Counts[st]), with(queue, attribute.String("state", string(st))))
			}
			o.ObserveFloat64(unfinished, float64(q.Unfinished), with(queue))
			p := 0.0
			if q.Paused {
				p = 1
			}
			o.ObserveFloat64(paused, p, with(queue))
			if q.Limit != nil {
				o.ObserveFloat64(limit, float64(*q.Limit), with(queue))
			}
			if read.Partitions > 0 {
				w := g.Waits[q.Queue]
				o.ObserveFloat64(partitions, float64(w.Partitions), with(queue))
				o.ObserveFloat64(oldest, w.Oldest.Seconds(), with(queue))
				for part, d := range w.Wait {
					o.ObserveFloat64(partitionWait, d.Seconds(), with(queue, attribute.String("partition", part)))
				}
			}
		}
		o.ObserveFloat64(quarantined, float64(g.QuarantinedFingerprints), with())
		for class, t := range g.RateTokens {
			o.ObserveFloat64(tokens, t, with(attribute.String("class", class)))
		}
		o.ObserveInt64(leaseRejections, g.Events.LeaseRejections, with())
		o.ObserveInt64(reclaims, g.Events.Reclaims, with())
		for class, n := range g.Events.RateLimited {
			o.ObserveInt64(rateLimited, n, with(attribute.String("class", class)))
		}
		for queue, n := range g.Events.BackpressureRejections {
			o.ObserveInt64(backpressure, n, with(attribute.String("queue", queue)))
		}
		return nil
	}, jobs, unfinished, paused, limit, quarantined, tokens, partitions, oldest, partitionWait,
		leaseRejections, reclaims, rateLimited, backpressure)
}

package headgateprom

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
)

// ScrapeTimeoutDefault bounds the Redis reads of one scrape.
const ScrapeTimeoutDefault = 5 * time.Second

// PartitionsPerQueueDefault is how many partitions of each queue a scrape reads the wait
// of by default.
const PartitionsPerQueueDefault = 10

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Namespace is the store namespace to export. Required.
	Namespace string
	// RateClasses are the rate classes whose tokens are exported: the store keeps no
	// list of them, and listing keys would cost a scan. Defaults to none.
	RateClasses []string
	// ScrapeTimeout bounds the Redis reads of one scrape; a scrape that fails reports
	// the error to Prometheus instead of stale values.
	// Defaults to ScrapeTimeoutDefault (5s).
	ScrapeTimeout time.Duration
	// PartitionsPerQueue is how many partitions of each queue the scrape reads the wait
	// of (headgate_partition_wait_seconds): the first ones of the queue's admission ring,
	// the partitions admitted next. It bounds the label count: queues x this. -1 reads
	// none. Defaults to PartitionsPerQueueDefault (10).
	PartitionsPerQueue int
}

// Collector is a prometheus.Collector of one namespace's state, read at each scrape.
type Collector struct {
	store   *headgate.Store
	opts    headgate.GaugesOptions
	timeout time.Duration

	jobs, unfinished, paused, limit, quarantined, tokens *prometheus.Desc
	leaseRejections, reclaims, rateLimited, backpressure *prometheus.Desc
	completed, failed                                    *prometheus.Desc
	partitions, oldest, partitionWait                    *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector of cfg.Namespace on rdb.
func NewCollector(rdb redis.UniversalClient, cfg *CollectorConfig) (*Collector, error) {
	if rdb == nil {
		return nil, errors.New("headgateprom: NewCollector needs a Redis client")
	}
	if cfg == nil {
		cfg = &CollectorConfig{}
	}
	if cfg.ScrapeTimeout < 0 {
		return nil, &headgate.InvalidError{Field: "CollectorConfig.ScrapeTimeout", Reason: "cannot be negative"}
	}
	if cfg.PartitionsPerQueue < -1 || cfg.PartitionsPerQueue > 1000 {
		return nil, &headgate.InvalidError{Field: "CollectorConfig.PartitionsPerQueue", Reason: "is " + itoa(cfg.PartitionsPerQueue) + ", outside -1..1000"}
	}
	parts := cmp.Or(cfg.PartitionsPerQueue, PartitionsPerQueueDefault)
	if parts < 0 {
		parts = 0
	}
	for i, c := range cfg.RateClasses {
		if c == "" {
			return nil, &headgate.InvalidError{Field: "CollectorConfig.RateClasses", Reason: "has an empty name at " + itoa(i)}
		}
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	ns := prometheus.Labels{"namespace": cfg.Namespace}
	return &Collector{
		store:   store,
		opts:    headgate.GaugesOptions{RateClasses: append([]string(nil), cfg.RateClasses...), Partitions: parts},
		timeout: cmp.Or(cfg.ScrapeTimeout, ScrapeTimeoutDefault),
		jobs: prometheus.NewDesc("headgate_jobs", "Jobs by queue and state.",
			[]string{"queue", "state"}, ns),
		unfinished: prometheus.NewDesc("headgate_queue_unfinished_jobs", "Jobs of the queue not yet terminal (what an enqueue limit bounds).",
			[]string{"queue"}, ns),
		paused: prometheus.NewDesc("headgate_queue_paused", "1 while the queue is paused, else 0.",
			[]string{"queue"}, ns),
		limit: prometheus.NewDesc("headgate_queue_enqueue_limit", "The queue's enqueue limit (absent when unbounded).",
			[]string{"queue"}, ns),
		quarantined: prometheus.NewDesc("headgate_quarantined_fingerprints", "Fingerprints in quarantine, waiting for an operator.",
			nil, ns),
		tokens: prometheus.NewDesc("headgate_rate_class_tokens", "Tokens the rate class holds at the store time of the scrape.",
			[]string{"class"}, ns),
		leaseRejections: prometheus.NewDesc("headgate_lease_rejections_total",
			"Writes of workers (ack, renew, checkpoint, output, progress) refused because they no longer held the lease.", nil, ns),
		reclaims: prometheus.NewDesc("headgate_reclaims_total", "Jobs taken back after their lease expired.", nil, ns),
		rateLimited: prometheus.NewDesc("headgate_rate_limited_total",
			"Jobs admission set aside because their rate class lacked the tokens.", []string{"class"}, ns),
		backpressure: prometheus.NewDesc("headgate_backpressure_rejections_total",
			"Enqueue calls refused because the queue was at its enqueue limit.", []string{"queue"}, ns),
		completed: prometheus.NewDesc("headgate_jobs_completed_total",
			"Jobs acked as a success, fleet-wide (the store's outcome counters).", []string{"queue"}, ns),
		failed: prometheus.NewDesc("headgate_jobs_failed_total",
			"Attempts that failed (acked as retried, archived or undecodable, or a lease reclaimed after a crash), fleet-wide (the store's outcome counters).", []string{"queue"}, ns),
		partitions: prometheus.NewDesc("headgate_queue_available_partitions",
			"Partitions of the queue with available work (not pinned to a worker).", []string{"queue"}, ns),
		oldest: prometheus.NewDesc("headgate_queue_oldest_available_seconds",
			"Longest wait since due of the next job of the partitions read (exact when the queue has no more partitions than PartitionsPerQueue).",
			[]string{"queue"}, ns),
		partitionWait: prometheus.NewDesc("headgate_partition_wait_seconds",
			"Time since the partition's next job was due, for the queue's next partitions in turn order.", []string{"queue", "partition"}, ns),
	}, nil
}

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.unfinished, c.paused, c.limit, c.quarantined, c.tokens,
		c.leaseRejections, c.reclaims, c.rateLimited, c.backpressure, c.completed, c.failed, c.partitions, c.oldest, c.partitionWait} {
		ch <- d
	}
}

// Collect reads the namespace (Store.Gauges) and sends its metrics; when Redis fails,
// it sends the error, which fails the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	opts := c.opts
	g, err := c.store.Gauges(ctx, &opts)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.jobs, err)
		return
	}
	for _, q := range g.Queues {
		for _, st := range headgate.States {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(q.Counts[st]), q.Queue, string(st))
		}
		ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, float64(q.Unfinished), q.Queue)
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, paused, q.Queue)
		if q.Limit != nil {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(*q.Limit), q.Queue)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, float64(g.QuarantinedFingerprints))
	for _, class := range c.opts.RateClasses {
		if t, ok := g.RateTokens[class]; ok {
			ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, t, class)
		}
	}
	ev := g.Events
	ch <- prometheus.MustNewConstMetric(c.leaseRejections, prometheus.CounterValue, float64(ev.LeaseRejections))
	ch <- prometheus.MustNewConstMetric(c.reclaims, prometheus.CounterValue, float64(ev.Reclaims))
	for class, n := range ev.RateLimited {
		ch <- prometheus.MustNewConstMetric(c.rateLimited, prometheus.CounterValue, float64(n), class)
	}
	for queue, n := range ev.BackpressureRejections {
		ch <- prometheus.MustNewConstMetric(c.backpressure, prometheus.CounterValue, float64(n), queue)
	}
	// The outcome counters ack.lua keeps (lib count_outcome): every worker's acks,
	// where the middleware's headgate_jobs_processed_total counts one process's.
	for queue, n := range ev.Completed {
		ch <- prometheus.MustNewConstMetric(c.completed, prometheus.CounterValue, float64(n), queue)
	}
	for queue, n := range ev.Failed {
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(n), queue)
	}
	if c.opts.Partitions == 0 {
		return
	}
	for _, q := range g.Queues {
		w := g.Waits[q.Queue] // zero for a queue without available work
		ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(w.Partitions), q.Queue)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, w.Oldest.Seconds(), q.Queue)
		for part, d := range w.Wait {
			ch <- prometheus.MustNewConstMetric(c.partitionWait, prometheus.GaugeValue, d.Seconds(), q.Queue, part)
		}
	}
}

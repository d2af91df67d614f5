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
}

// Collector is a prometheus.Collector of one namespace's state, read at each scrape.
type Collector struct {
	store   *headgate.Store
	classes []string
	timeout time.Duration

	jobs, unfinished, paused, limit, quarantined, tokens *prometheus.Desc
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
		classes: append([]string(nil), cfg.RateClasses...),
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
	}, nil
}

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.unfinished, c.paused, c.limit, c.quarantined, c.tokens} {
		ch <- d
	}
}

// Collect reads the namespace (Store.Gauges) and sends its metrics; when Redis fails,
// it sends the error, which fails the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	g, err := c.store.Gauges(ctx, c.classes)
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
	for _, class := range c.classes {
		if t, ok := g.RateTokens[class]; ok {
			ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, t, class)
		}
	}
}

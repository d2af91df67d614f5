package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	headgateotel "github.com/headgate/headgate/contrib/otel"
	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// The headgate-observed systems are headgate with what a production deployment turns
// on, to read what observability costs next to headgate in one run:
//
//	go run . -systems headgate,headgate-metrics,headgate-observed-sampled,headgate-observed -scenarios e2e
//
// headgate-metrics has the Prometheus instruments on the producer and the worker and the
// namespace collector scraped once a second. headgate-observed adds OpenTelemetry
// tracing of every enqueue and attempt, batched to an exporter that drops the spans (so
// the cost is the spans' and not a collector's); headgate-observed-sampled samples one
// trace in ten (ParentBased(TraceIDRatioBased(0.1)), a common production setting).
func init() {
	for name, sampler := range map[string]sdktrace.Sampler{
		"headgate-metrics":          nil,
		"headgate-observed":         sdktrace.AlwaysSample(),
		"headgate-observed-sampled": sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)),
	} {
		registerGo(name, func(ctx context.Context, addr string) (Queue, error) {
			obs, err := newObservability(addr, sampler)
			if err != nil {
				return nil, err
			}
			q, err := openHeadgateWith(ctx, addr, obs)
			if err != nil {
				obs.close()
			}
			return q, err
		})
	}
}

// observabilityScrape is how often the collector is scraped during a run.
const observabilityScrape = time.Second

type observability struct {
	metrics *headgateprom.Metrics
	tp      *sdktrace.TracerProvider // nil: no tracing
	rdb     *redis.Client            // the collector's
	stop    context.CancelFunc
	done    sync.WaitGroup
}

func newObservability(addr string, sampler sdktrace.Sampler) (*observability, error) {
	o := &observability{metrics: headgateprom.NewMetrics(nil), rdb: redis.NewClient(&redis.Options{Addr: addr})}
	if sampler != nil {
		o.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	}
	reg := prometheus.NewRegistry()
	collector, err := headgateprom.NewCollector(o.rdb, &headgateprom.CollectorConfig{Namespace: headgateNamespace})
	if err == nil {
		err = reg.Register(collector)
	}
	if err == nil {
		err = reg.Register(o.metrics)
	}
	if err != nil {
		_ = o.rdb.Close()
		return nil, fmt.Errorf("headgate-observed: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	o.done.Add(1)
	go func() {
		defer o.done.Done()
		tick := time.NewTicker(observabilityScrape)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = reg.Gather() // a failed scrape is Prometheus's to report; the run goes on
			}
		}
	}()
	return o, nil
}

func (o *observability) enqueueMiddleware() []rqueue.EnqueueMiddleware {
	if o == nil {
		return nil
	}
	mw := []rqueue.EnqueueMiddleware{o.metrics.EnqueueMiddleware()}
	if o.tp != nil {
		mw = append(mw, headgateotel.EnqueueMiddleware(&headgateotel.Config{TracerProvider: o.tp}))
	}
	return mw
}

func (o *observability) workerMiddleware() []worker.Middleware {
	if o == nil {
		return nil
	}
	mw := []worker.Middleware{o.metrics.WorkerMiddleware(0)}
	if o.tp != nil {
		mw = append(mw, headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: o.tp}))
	}
	return mw
}

func (o *observability) close() {
	if o == nil {
		return
	}
	o.stop()
	o.done.Wait()
	if o.tp != nil {
		_ = o.tp.Shutdown(context.Background())
	}
	_ = o.rdb.Close()
}

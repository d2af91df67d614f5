package headgateprom_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	headgateprom "github.com/headgate/headgate/contrib/prometheus"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// A process registers a Collector for the namespace's state and Metrics for what its
// producers and workers do, then serves the registry (promhttp.HandlerFor) on /metrics.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	collector, err := headgateprom.NewCollector(rdb, &headgateprom.CollectorConfig{Namespace: "shop"})
	if err != nil {
		log.Fatal(err)
	}
	metrics := headgateprom.NewMetrics(nil)
	reg.MustRegister(collector, metrics)

	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "shop",
		EnqueueMiddleware: []rqueue.EnqueueMiddleware{metrics.EnqueueMiddleware()}})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: "shop",
		Middleware: []worker.Middleware{metrics.WorkerMiddleware(0)}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[emailArgs]) error { return nil })

	ctx := context.Background()
	for _, to := range []string{"ada", "grace"} {
		if _, err := client.Enqueue(ctx, emailArgs{To: to}, nil); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := w.Work(ctx, 1); err != nil { // one of the two jobs runs
		log.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if !strings.HasPrefix(mf.GetName(), "headgate_jobs") || v == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Println(mf.GetName(), strings.Join(labels, " "), v)
		}
	}
	// Output:
	// headgate_jobs namespace=shop queue=default state=available 1
	// headgate_jobs_completed_total namespace=shop queue=default 1
	// headgate_jobs_enqueued_total kind=email queue=default 2
	// headgate_jobs_processed_total kind=email outcome=success queue=default 1
}

package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/dashboard"
	"github.com/headgate/headgate/internal/redistest"
)

// BenchmarkPages renders every page of a namespace holding a million jobs
// (HEADGATE_BENCH_DASHBOARD_JOBS overrides the number) on a private redis-server: the
// time per op is the server time of one page, Redis round trips included.
//
//	go test -run x -bench Pages -benchtime 20x ./dashboard
func BenchmarkPages(b *testing.B) {
	total := 1_000_000
	if v := os.Getenv("HEADGATE_BENCH_DASHBOARD_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("HEADGATE_BENCH_DASHBOARD_JOBS=%q: %v", v, err)
		}
		total = n
	}
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	const ns = "bench"
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	cancelled := seedMillion(b, store, total)
	b.Logf("seeded %d jobs (%d cancelled) in %s", total, cancelled, time.Since(start).Round(time.Millisecond))
	if err := store.SetRateLimit(ctx, "api", headgate.RateLimit{Limit: 100, Window: time.Second, Burst: 100}); err != nil {
		b.Fatal(err)
	}
	// An hour of throughput samples, so the overview draws a full chart.
	if err := store.FreezeClock(ctx, time.Now()); err != nil {
		b.Fatal(err)
	}
	for range 61 {
		if _, err := store.RecordSeries(ctx, 0); err != nil {
			b.Fatal(err)
		}
		if err := store.AdvanceClock(ctx, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	h, err := dashboard.New(rdb, &dashboard.Config{Namespace: ns, RateClasses: []string{"api"}})
	if err != nil {
		b.Fatal(err)
	}
	mid := fmt.Sprintf("j%010d", total/2+1) // an available job
	for _, page := range []struct{ name, path string }{
		{"overview", "/"},
		{"overview.json", "/overview.json"},
		{"available", "/queues/bulk/available"},
		{"available_oldest", "/queues/bulk/available?order=oldest"},
		{"available_partition", "/queues/bulk/available?partition=tenant-7"},
		{"available_kind_tag", "/queues/bulk/available?kind=k3&tag=t1"},
		{"cancelled", "/queues/bulk/cancelled"},
		{"cancelled_partition", "/queues/bulk/cancelled?partition=tenant-7"},
		{"by_id", "/queues/bulk/available?id=" + mid},
		{"job", "/jobs/" + mid},
		{"tenants", "/queues/bulk/tenants"},
		{"tenants_page2", "/queues/bulk/tenants?offset=50"},
		{"workers", "/workers"},
		{"cron", "/cron"},
		{"quarantine", "/quarantine"},
		{"rates", "/rates"},
		{"policy", "/policy"},
		{"workflows", "/workflows"},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, page.path, nil)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", page.path, w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// seedMillion enqueues total jobs into queue "bulk" over 100 partitions, 5 kinds and 3
// tags, and cancels one in a hundred; it returns how many it cancelled.
func seedMillion(b *testing.B, store *headgate.Store, total int) int {
	ctx := context.Background()
	const batch, workers = 1000, 4
	run := func(n int, fn func(i int) error) {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		next := make(chan int)
		for range workers {
			wg.Go(func() {
				for i := range next {
					if err := fn(i); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	feed:
		for i := range n {
			select {
			case next <- i:
			case err := <-errs:
				b.Fatal(err)
				break feed
			}
		}
		close(next)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	id := func(i int) string { return fmt.Sprintf("j%010d", i) }
	run((total+batch-1)/batch, func(n int) error {
		jobs := make([]headgate.Envelope, 0, batch)
		for i := n * batch; i < min((n+1)*batch, total); i++ {
			jobs = append(jobs, headgate.Envelope{ID: id(i), Kind: fmt.Sprintf("k%d", i%5), Queue: "bulk",
				PartitionKey: fmt.Sprintf("tenant-%d", i%100), Tags: []string{fmt.Sprintf("t%d", i%3)}, Payload: []byte{0x81, 0xa1, 'n', 0x01}})
		}
		_, err := store.Enqueue(ctx, jobs...)
		return err
	})
	cancelled := (total + 99) / 100
	run(cancelled, func(n int) error { return store.Cancel(ctx, id(n*100)) })
	return cancelled
}

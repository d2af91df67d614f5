package headgate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

type sentinelArgs struct {
	N int `msgpack:"n"`
}

func (sentinelArgs) Kind() string { return "sentinel" }

// TestSentinel runs producers, workers and an inspector on Sentinel-backed clients
// (redis.NewFailoverClient with a master name, passed as a redis.UniversalClient) of a
// master with one replica, and fails the master over with SENTINEL FAILOVER while they
// work. Producers enqueue with DurableReplicas 1 and retry each id until an enqueue returns
// no error; every job so acknowledged is processed in the end, and the workers carry on
// on the new master without intervention.
func TestSentinel(t *testing.T) {
	t.Parallel()
	const (
		before = 100 // jobs acknowledged and processed before the failover
		after  = 100 // jobs acknowledged after it
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := redistest.StartSentinel(t)
	// Each part has a client of its own, as separate processes would.
	newClient := func() redis.UniversalClient { return s.Client(t) }

	var mu sync.Mutex
	ran := map[string]int{}
	changed := make(chan struct{}, 1)
	for i := range 2 {
		w, err := worker.New(newClient(), &worker.Config{Namespace: "sentinel", ID: fmt.Sprintf("w%d", i),
			Concurrency: 4, Lease: 2 * time.Second, RetryBase: 10 * time.Millisecond, DutyLease: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		worker.Handle(w, func(ctx context.Context, j *worker.Job[sentinelArgs]) error {
			mu.Lock()
			ran[j.ID]++
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
			return nil
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := w.Stop(context.Background()); err != nil {
				t.Errorf("Stop %s: %v", w.ID(), err)
			}
		})
	}
	producer, err := rqueue.NewClient(newClient(), &rqueue.Config{Namespace: "sentinel", Retention: time.Hour,
		DurableReplicas: 1, DurableTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}

	var (
		ackMu sync.Mutex
		acked []string
		fails int
	)
	stop := make(chan struct{})
	produced := make(chan struct{})
	// pace waits d between the producer's calls, or returns false once it is stopped: it
	// paces a load generator, it does not wait for store time.
	pace := func(d time.Duration) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-stop:
			return false
		case <-timer.C:
			return true
		}
	}
	go func() {
		defer close(produced)
		for n := 0; ; n++ {
			id := fmt.Sprintf("job-%05d", n)
			for {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := producer.Enqueue(cctx, sentinelArgs{N: n}, &rqueue.EnqueueOpts{ID: id})
				cancel()
				if err == nil {
					break
				}
				ackMu.Lock()
				fails++
				ackMu.Unlock()
				if !pace(20 * time.Millisecond) { // the master is changing: try again shortly
					return
				}
			}
			ackMu.Lock()
			acked = append(acked, id)
			ackMu.Unlock()
			if !pace(2 * time.Millisecond) { // a steady load, not a flood
				return
			}
		}
	}()
	ackedCount := func() int { ackMu.Lock(); defer ackMu.Unlock(); return len(acked) }
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.NewTimer(time.Minute)
		defer deadline.Stop()
		for !ok() {
			select {
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			case <-deadline.C:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitUntil("jobs before the failover", func() bool { return ackedCount() >= before })

	start := time.Now()
	oldMaster, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newMaster, err := s.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	t.Logf("SENTINEL FAILOVER: %s -> %s in %s", oldMaster, newMaster, promoted.Sub(start).Round(time.Millisecond))
	atFailover := ackedCount()
	waitUntil("durable enqueues after the failover", func() bool { return ackedCount() >= atFailover+after })
	t.Logf("durable enqueues resumed %s after the promotion (once the old master was a replica again); %d enqueue attempts failed",
		time.Since(promoted).Round(time.Millisecond), fails)
	close(stop)
	<-produced

	ackMu.Lock()
	all := append([]string(nil), acked...)
	ackMu.Unlock()
	waitUntil("every acknowledged job to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range all {
			if ran[id] == 0 {
				return false
			}
		}
		return true
	})

	// The inspector, on the same kind of client, sees the jobs completed on the new master.
	insp, err := inspector.New(newClient(), &inspector.Config{Namespace: "sentinel"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{all[0], all[len(all)-1]} {
		var d *inspector.JobDetail
		waitUntil("job "+id+" completed", func() bool {
			d, err = insp.Job(ctx, id)
			return err == nil && d.Job.State == headgate.StateCompleted
		})
	}
	if _, err := insp.Job(ctx, "missing"); !errors.Is(err, headgate.ErrJobNotFound) {
		t.Errorf("Job(missing) = %v, want ErrJobNotFound", err)
	}
}

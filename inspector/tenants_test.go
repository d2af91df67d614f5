package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
)

// TestThroughput sums each queue's acks over the last hour from its series: samples a
// minute apart, one before the hour as the base, and a queue without samples unsampled.
func TestThroughput(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupOn(t, rdb)
		ctx, store, insp := b.ctx, b.store, b.insp
		// ack runs and acks one job of queue q: a success, or a failure that archives it.
		n := 0
		ack := func(q string, o headgate.Outcome) {
			t.Helper()
			n++
			id := q + "-" + time.Duration(n).String()
			_, err := store.Enqueue(ctx, headgate.Envelope{ID: id, Kind: "k", Queue: q, MaxAttempts: 1})
			must(t, err)
			claims, err := store.Admit(ctx, headgate.AdmitRequest{Worker: "w", LeaseID: id, Queues: []string{q}, Capacity: 1, Lease: time.Minute})
			must(t, err)
			if len(claims) != 1 {
				t.Fatalf("admitted %d jobs of %s, want 1", len(claims), q)
			}
			_, err = store.Ack(ctx, claims[0].LeaseRef(), o, &headgate.AckOpts{Error: "e"})
			must(t, err)
		}
		record := func() {
			t.Helper()
			_, err := store.RecordSeries(ctx, 0)
			must(t, err)
			must(t, store.AdvanceClock(ctx, time.Minute))
		}
		// Queues "idle" and "jobs" are known (the series duty samples them) from the
		// start; "idle" never acks.
		_, err := store.Enqueue(ctx, headgate.Envelope{ID: "idle-1", Kind: "k", Queue: "idle"},
			headgate.Envelope{ID: "jobs-0", Kind: "k", Queue: "jobs", Pending: true})
		must(t, err)
		ack("mail", headgate.OutcomeSuccess) // before the hour's base sample: not counted
		record()                             // epoch: the base, an hour before now
		ack("mail", headgate.OutcomeSuccess)
		ack("mail", headgate.OutcomeRetry)
		ack("jobs", headgate.OutcomeSuccess)
		for range 59 { // epoch+1m (the acks' minute, 59 minutes before now) .. epoch+59m
			record()
		}
		ack("mail", headgate.OutcomeSuccess) // after the newest sample: counted from the live counters
		now := epoch.Add(60 * time.Minute)
		got, err := insp.Throughput(ctx, now, time.Hour, "mail", "jobs", "idle", "unknown")
		must(t, err)
		want := map[string]inspector.Outcomes{
			"mail":    {Completed: 2, Failed: 1, Sampled: true},
			"jobs":    {Completed: 1, Sampled: true},
			"idle":    {Sampled: true},
			"unknown": {},
		}
		for q, w := range want {
			if got[q] != w {
				t.Errorf("Throughput[%s] = %+v, want %+v", q, got[q], w)
			}
		}
		// Ten minutes on, the first minute of acks has left the hour; the unsampled
		// ack has not.
		got, err = insp.Throughput(ctx, now.Add(10*time.Minute), time.Hour, "mail")
		must(t, err)
		if w := (inspector.Outcomes{Completed: 1, Sampled: true}); got["mail"] != w {
			t.Errorf("Throughput ten minutes on = %+v, want %+v", got["mail"], w)
		}
		// The live counters are read after the caller's now, as on a running clock they
		// always are: they count all the same.
		must(t, store.AdvanceClock(ctx, time.Millisecond))
		got, err = insp.Throughput(ctx, now, time.Hour, "mail")
		must(t, err)
		if w := (inspector.Outcomes{Completed: 2, Failed: 1, Sampled: true}); got["mail"] != w {
			t.Errorf("Throughput with the live counters a millisecond past now = %+v, want %+v", got["mail"], w)
		}
		if _, err := insp.Throughput(ctx, now, 0, "mail"); !errors.As(err, new(*headgate.InvalidError)) {
			t.Errorf("Throughput over no window: %v, want *InvalidError", err)
		}
	})
}

// TestPartitionStats reads a queue's partitions through the inspector, in turn order.
func TestPartitionStats(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setupOn(t, rdb)
		ctx, store, insp := b.ctx, b.store, b.insp
		_, err := store.Enqueue(ctx, headgate.Envelope{ID: "a1", Kind: "k", Queue: "q", PartitionKey: "acme"},
			headgate.Envelope{ID: "b1", Kind: "k", Queue: "q", PartitionKey: "beta", ScheduledAt: epoch.Add(-time.Minute)})
		must(t, err)
		must(t, store.AdvanceClock(ctx, time.Second))
		stats, total, err := insp.PartitionStats(ctx, "q", 0, 10)
		must(t, err)
		if total != 2 || len(stats) != 2 {
			t.Fatalf("PartitionStats = %+v, %d; want acme and beta", stats, total)
		}
		for _, st := range stats {
			want := map[string]time.Duration{"acme": time.Second, "beta": 61 * time.Second}[st.Partition]
			if st.Waiting != 1 || st.Counts[headgate.StateAvailable] != 1 || st.Oldest != want || st.WaitP50 != want {
				t.Errorf("partition %s = %+v, want 1 waiting for %s", st.Partition, st, want)
			}
		}
		if _, _, err := insp.PartitionStats(ctx, "q", 0, 0); !errors.As(err, new(*headgate.InvalidError)) {
			t.Errorf("PartitionStats limit 0: %v, want *InvalidError", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// roundTrips counts the calls a client sends to Redis: a pipeline is one.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); name != "hello" && name != "client" { // not a connection's handshake
			r.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Throughput reads every queue's series in one round trip, however many queues and
// samples there are.
func TestThroughputIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	queues := make([]string, 50)
	for i := range queues {
		queues[i] = fmt.Sprintf("q%02d", i)
		b.enqueue(t, headgate.Envelope{ID: queues[i], Queue: queues[i]})
	}
	for range 3 {
		if _, err := b.store.RecordSeries(b.ctx, 0); err != nil {
			t.Fatal(err)
		}
		must(t, b.store.AdvanceClock(b.ctx, time.Minute))
	}
	rdb := redis.NewClient(&redis.Options{Addr: b.store.Client().(*redis.Client).Options().Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: b.insp.Namespace()})
	must(t, err)
	// A store's first call also reads the namespace's storage format, once.
	_, err = insp.Throughput(b.ctx, epoch.Add(3*time.Minute), time.Hour, queues...)
	must(t, err)
	rt.n.Store(0)
	got, err := insp.Throughput(b.ctx, epoch.Add(3*time.Minute), time.Hour, queues...)
	must(t, err)
	if len(got) != 50 || !got["q49"].Sampled {
		t.Fatalf("Throughput = %d queues, q49 %+v; want 50, sampled", len(got), got["q49"])
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("Throughput of 50 queues took %d round trips, want 1", n)
	}
}

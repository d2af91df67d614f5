package headgate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestGauges reads a namespace in a known state: counts by queue and state, a pause, a
// limit, a quarantined fingerprint and a rate bucket refilled to the store time.
func TestGauges(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, testGauges)
}

func testGauges(t *testing.T, rdb redis.UniversalClient) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ns := redistest.Namespace(t)
	s, err := NewStore(rdb, &StoreConfig{Namespace: ns, CrashLimit: 1})
	must(err)
	epoch := time.UnixMilli(1_750_000_000_000)
	must(s.FreezeClock(ctx, epoch))
	must(s.SetRateLimit(ctx, "api", RateLimit{Limit: 10, Window: 10 * time.Second, Burst: 5}))
	_, err = s.Enqueue(ctx,
		Envelope{ID: "a1", Kind: "k", Queue: "a"},
		Envelope{ID: "a2", Kind: "k", Queue: "a", ScheduledIn: time.Hour},
		Envelope{ID: "b1", Kind: "k", Queue: "b", RateClass: "api"},
		Envelope{ID: "b2", Kind: "k", Queue: "b", RateClass: "api"},
		Envelope{ID: "b3", Kind: "k", Queue: "b", RateClass: "api", Fingerprint: "fp"},
	)
	must(err)
	claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"b"}, Capacity: 3, Lease: time.Second})
	must(err)
	if len(claims) != 3 {
		t.Fatalf("admitted %d, want 3", len(claims))
	}
	for _, c := range claims[:2] {
		_, err := s.Ack(ctx, c.LeaseRef(), OutcomeSkip, &AckOpts{Error: "no"})
		must(err)
	}
	must(s.AdvanceClock(ctx, 2*time.Second)) // b3's lease expires; the bucket gains 2
	rs, err := s.ReclaimExpired(ctx, 10)
	must(err)
	if len(rs) != 1 || !rs[0].Quarantined {
		t.Fatalf("reclaimed %+v, want b3 quarantined", rs)
	}
	must(s.PauseQueue(ctx, "a"))
	must(s.SetEnqueueLimit(ctx, "c", 7))
	// The events the scripts count: an ack from a lease already reclaimed, an enqueue
	// over c's limit, a job its class cannot pay for yet (4 tokens, weight 5).
	if _, err := s.Ack(ctx, claims[2].LeaseRef(), OutcomeSuccess, nil); !errors.As(err, new(*LeaseRejectedError)) {
		t.Fatalf("ack of a reclaimed lease: %v, want LeaseRejectedError", err)
	}
	stale := claims[2].LeaseRef()
	if lost, err := s.Renew(ctx, []LeaseRef{stale}, time.Second); err != nil || len(lost) != 1 {
		t.Fatalf("renew of a reclaimed lease: lost %v, %v; want it lost", lost, err)
	}
	for what, err := range map[string]error{
		"checkpoint": s.Checkpoint(ctx, stale, Checkpoint{InProgress: "s"}),
		"output":     second(s.WriteOutput(ctx, stale, Blob{SchemaVersion: 1, Bytes: []byte("x")})),
		"progress":   second(s.WriteProgress(ctx, stale, Progress{Current: 1})),
	} {
		if !errors.As(err, new(*LeaseRejectedError)) {
			t.Fatalf("%s of a reclaimed lease: %v, want LeaseRejectedError", what, err)
		}
	}
	over := make([]Envelope, 8)
	for i := range over {
		over[i] = Envelope{ID: fmt.Sprintf("c%d", i), Kind: "k", Queue: "c"}
	}
	if _, err := s.Enqueue(ctx, over...); !errors.As(err, new(*BackpressureError)) {
		t.Fatalf("enqueue over the limit: %v, want BackpressureError", err)
	}
	_, err = s.Enqueue(ctx, Envelope{ID: "d1", Kind: "k", Queue: "d", RateClass: "api", Weight: 5},
		Envelope{ID: "e1", Kind: "k", Queue: "e", PartitionKey: "t1", ScheduledAt: epoch.Add(-time.Minute)},
		Envelope{ID: "e2", Kind: "k", Queue: "e", PartitionKey: "t2", ScheduledAt: epoch.Add(time.Second)},
		Envelope{ID: "e3", Kind: "k", Queue: "e", PartitionKey: "t3"})
	must(err)
	if claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l2", Queues: []string{"d"}, Capacity: 1, Lease: time.Second}); err != nil || len(claims) != 0 {
		t.Fatalf("admit of d1: %d claims, %v; want it parked", len(claims), err)
	}

	g, err := s.Gauges(ctx, &GaugesOptions{RateClasses: []string{"api", "unconfigured"}, Partitions: 2})
	must(err)
	limit := int64(7)
	want := &Gauges{
		Now: epoch.Add(2 * time.Second),
		Queues: []QueueStats{
			{Queue: "a", Counts: map[State]int64{StateAvailable: 1, StateScheduled: 1}, Unfinished: 2, Paused: true,
				Unserved: true}, // no worker beats in this test
			{Queue: "b", Counts: map[State]int64{StateArchived: 2, StateQuarantined: 1}},
			{Queue: "c", Counts: map[State]int64{}, Limit: &limit},
			{Queue: "d", Counts: map[State]int64{StateAvailable: 1}, Unfinished: 1, Unserved: true},
			{Queue: "e", Counts: map[State]int64{StateAvailable: 3}, Unfinished: 3, Unserved: true},
		},
		QuarantinedFingerprints: 1,
		RateTokens:              map[string]float64{"api": 4}, // 5 - 3 + 2 gained in 2s
		Events: EventCounts{LeaseRejections: 5, Reclaims: 1, RateLimited: map[string]int64{"api": 1},
			BackpressureRejections: map[string]int64{"c": 1}, Completed: map[string]int64{},
			Failed: map[string]int64{"b": 1}}, // b3's lost lease
		Waits: map[string]QueueWaits{
			"a": {Partitions: 1, Oldest: 2 * time.Second, Wait: map[string]time.Duration{"": 2 * time.Second}},
			// e's ring is in enqueue order; t3 is past the 2 partitions read.
			"e": {Partitions: 3, Oldest: time.Minute + 2*time.Second,
				Wait: map[string]time.Duration{"t1": time.Minute + 2*time.Second, "t2": time.Second}},
		},
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("Gauges =\n%+v\nwant\n%+v", g, want)
	}
	if _, err := s.Gauges(ctx, &GaugesOptions{RateClasses: []string{""}}); err == nil {
		t.Errorf("Gauges with an empty class name: no error")
	}
	if _, err := s.Gauges(ctx, &GaugesOptions{Partitions: -1}); !errors.As(err, new(*InvalidError)) {
		t.Errorf("Gauges with -1 partitions: %v, want InvalidError", err)
	}
}

func second[T any](_ T, err error) error { return err }

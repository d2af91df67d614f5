package headgate

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestGauges reads a namespace in a known state: counts by queue and state, a pause, a
// limit, a quarantined fingerprint and a rate bucket refilled to the store time.
func TestGauges(t *testing.T) {
	t.Parallel()
	for name, rdb := range map[string]func(t *testing.T) redis.UniversalClient{
		"miniredis": func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
		},
		"redis":   func(t *testing.T) redis.UniversalClient { return redistest.Shared(t) },
		"Cluster": func(t *testing.T) redis.UniversalClient { return redistest.SharedCluster(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testGauges(t, rdb(t))
		})
	}
}

func testGauges(t *testing.T, rdb redis.UniversalClient) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ns := fmt.Sprintf("gauges-%s-%d", t.Name(), time.Now().UnixNano())
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

	g, err := s.Gauges(ctx, []string{"api", "unconfigured"})
	must(err)
	limit := int64(7)
	want := &Gauges{
		Now: epoch.Add(2 * time.Second),
		Queues: []QueueStats{
			{Queue: "a", Counts: map[State]int64{StateAvailable: 1, StateScheduled: 1}, Unfinished: 2, Paused: true,
				Unserved: true}, // no worker beats in this test
			{Queue: "b", Counts: map[State]int64{StateArchived: 2, StateQuarantined: 1}},
			{Queue: "c", Counts: map[State]int64{}, Limit: &limit},
		},
		QuarantinedFingerprints: 1,
		RateTokens:              map[string]float64{"api": 4}, // 5 - 3 + 2 gained in 2s
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("Gauges =\n%+v\nwant\n%+v", g, want)
	}
	if _, err := s.Gauges(ctx, []string{""}); err == nil {
		t.Errorf("Gauges with an empty class name: no error")
	}
}

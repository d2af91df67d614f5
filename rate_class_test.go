package headgate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// RateClass reads a class's limit, its tokens refilled to the store time, its parked
// jobs and its rate-limited count; an unconfigured class has no limit.
func TestRateClass(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		epoch := frozenEpoch
		must(s.SetRateLimit(ctx, "api", RateLimit{Limit: 1, Window: time.Second, Burst: 3}))
		_, err := s.Enqueue(ctx, Envelope{ID: "a", Kind: "k", RateClass: "api", Weight: 2},
			Envelope{ID: "b", Kind: "k", RateClass: "api", Weight: 2})
		must(err)
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault}, Capacity: 2, Lease: time.Minute})
		must(err)
		if len(claims) != 1 {
			t.Fatalf("admitted %d, want 1 (b short of tokens)", len(claims))
		}
		must(s.AdvanceClock(ctx, 1500*time.Millisecond))
		got, err := s.RateClass(ctx, "api")
		must(err)
		want := &RateClassState{Class: "api", Limit: &RateLimit{Limit: 1, Window: time.Second, Burst: 3},
			Tokens: 2, At: epoch.Add(1500 * time.Millisecond), Parked: 1, RateLimited: 1} // 3 - 2 + 1 gained
		if !reflect.DeepEqual(got, want) {
			t.Errorf("RateClass = %+v, want %+v", got, want)
		}
		got, err = s.RateClass(ctx, "none")
		must(err)
		if want := (&RateClassState{Class: "none", At: epoch.Add(1500 * time.Millisecond)}); !reflect.DeepEqual(got, want) {
			t.Errorf("RateClass of an unconfigured class = %+v, want %+v", got, want)
		}
		if _, err := s.RateClass(ctx, ""); !errors.As(err, new(*InvalidError)) {
			t.Errorf("RateClass(\"\"): %v, want InvalidError", err)
		}
	})
}

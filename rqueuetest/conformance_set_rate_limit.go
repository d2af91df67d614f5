package rqueuetest

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// setRateLimitCases cover SetRateLimit (lua/set_rate_limit.lua): a rate class's bucket.
var setRateLimitCases = []conformanceCase{
	{"Corrupt/SetRateLimit", func(t *testing.T, s *headgate.Store) {
		rl := headgate.RateLimit{Limit: 5, Window: time.Minute, Burst: 7}
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustSetRateLimit(t, ctx, s, "api", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
			},
			keys: keysNamed("rate:"),
			call: func(ctx context.Context, s *headgate.Store) error { return s.SetRateLimit(ctx, "api", rl) },
			// The call rewrites the whole bucket, so it repairs any corruption of it.
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, _ string) {
				got, err := s.Client().HGetAll(ctx, nsKey(s, "rate:api")).Result()
				want := map[string]string{"tokens": "7", "burst": "7", "limit": "5", "window": "60000",
					"refilled": strconv.FormatInt(epoch.UnixMilli(), 10)}
				if err != nil || !maps.Equal(got, want) {
					t.Errorf("after set: bucket %v, %v; want %v", got, err, want)
				}
			},
		})
	}},
}

// mustSetRateLimit sets the limit of a rate class, failing the test on an error.
func mustSetRateLimit(t testing.TB, ctx context.Context, s *headgate.Store, class string, rl headgate.RateLimit) {
	t.Helper()
	if err := s.SetRateLimit(ctx, class, rl); err != nil {
		t.Fatalf("set the rate limit of %s: %v", class, err)
	}
}

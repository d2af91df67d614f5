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
	{"SetRateLimit/FullFromNow", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		wantBucket := func(what, class string, want *headgate.RateLimit, tokens float64) {
			t.Helper()
			st, err := s.RateClass(ctx, class)
			switch {
			case err != nil:
				t.Errorf("%s: %v", what, err)
			case want == nil && st.Limit != nil:
				t.Errorf("%s: class %s has limit %+v, want none", what, class, *st.Limit)
			case want != nil && (st.Limit == nil || *st.Limit != *want || st.Tokens != tokens):
				t.Errorf("%s: class %s has limit %+v holding %v, want %+v holding %v", what, class, st.Limit, st.Tokens, *want, tokens)
			}
		}
		rl := headgate.RateLimit{Limit: 2, Window: time.Minute, Burst: 3}
		mustSetRateLimit(t, ctx, s, "api", rl)
		wantBucket("set", "api", &rl, 3)
		wantBucket("set", "other", nil, 0)
		spendClass(t, ctx, s, "api", 3)
		wantBucket("spent", "api", &rl, 0)
		advance(t, ctx, s, 30*time.Second)
		wantBucket("half a window on", "api", &rl, 1)
		// A new limit starts full, refilled from now, whatever the bucket held.
		next := headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 5}
		mustSetRateLimit(t, ctx, s, "api", next)
		wantBucket("set again", "api", &next, 5)
		advance(t, ctx, s, 30*time.Minute)
		wantBucket("full", "api", &next, 5)
	}},
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

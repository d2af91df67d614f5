package rqueuetest

import (
	"context"
	"testing"

	"github.com/headgate/headgate"
)

// releaseDutyCases cover ReleaseDuty (lua/release_duty.lua).
var releaseDutyCases = []conformanceCase{
	{"Corrupt/ReleaseDuty", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustClaimDuty(t, ctx, s, "a")
			},
			keys: keysNamed("duty:"),
			call: func(ctx context.Context, s *headgate.Store) error { return s.ReleaseDuty(ctx, "reclaim", "a") },
		})
	}},
}

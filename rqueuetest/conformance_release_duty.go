package rqueuetest

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// releaseDutyCases cover ReleaseDuty (lua/release_duty.lua).
var releaseDutyCases = []conformanceCase{
	{"ReleaseDuty/OnlyTheHolder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		releaseWritesNothing := func(what, holder string) {
			t.Helper()
			writesNothing(t, ctx, s, what, func() {
				if err := s.ReleaseDuty(ctx, "cron", holder); err != nil {
					t.Errorf("%s: %v", what, err)
				}
			})
		}
		releaseWritesNothing("release of a duty nobody claimed", "a")
		first, err := s.ClaimDutyLease(ctx, "cron", "a", 10*time.Second)
		if err != nil || !first.Held {
			t.Fatalf("a's claim: %+v, %v", first, err)
		}
		releaseWritesNothing("b's release of a's duty", "b")
		if other, err := s.ClaimDutyLease(ctx, "cron", "b", 10*time.Second); err != nil || other.Held {
			t.Errorf("b claimed a's duty after b's release: %+v, %v", other, err)
		}
		if err := s.ReleaseDuty(ctx, "cron", "a"); err != nil {
			t.Fatal(err)
		}
		releaseWritesNothing("a's second release", "a")
		// Released, the duty is free at once, and the next tenure's fence is higher.
		if b, err := s.ClaimDutyLease(ctx, "cron", "b", 10*time.Second); err != nil || !b.Held || b.Fence != first.Fence+1 {
			t.Errorf("b after a released: %+v, %v; want held at fence %d", b, err, first.Fence+1)
		}
	}},
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

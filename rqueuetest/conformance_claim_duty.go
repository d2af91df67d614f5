package rqueuetest

import (
	"context"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// claimDutyCases cover ClaimDuty and ClaimDutyLease (lua/claim_duty.lua): one holder of a
// maintenance duty at a time, until its lease runs out or it releases the duty.
var claimDutyCases = []conformanceCase{
	{"Duty/OneHolderUntilExpiryOrRelease", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		claim := func(holder string) bool {
			ok, err := s.ClaimDuty(ctx, "reclaim", holder, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim("a") || claim("b") || !claim("a") {
			t.Errorf("claim: a must get and renew the duty, b must not")
		}
		advance(t, ctx, s, 10*time.Second)
		if !claim("b") {
			t.Errorf("b could not take an expired duty")
		}
		if err := s.ReleaseDuty(ctx, "reclaim", "a"); err != nil || claim("a") {
			t.Errorf("a released b's duty")
		}
		if err := s.ReleaseDuty(ctx, "reclaim", "b"); err != nil || !claim("a") {
			t.Errorf("a could not take a released duty")
		}
	}},
	{"Duty/FenceGrowsWithEachTenure", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		claim := func(holder string) headgate.DutyLease {
			l, err := s.ClaimDutyLease(ctx, "cron", holder, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		first := claim("a")
		if renewed := claim("a"); !first.Held || renewed != first {
			t.Errorf("claim %+v, renewal %+v: a renewal keeps the fence", first, renewed)
		}
		if other := claim("b"); other.Held || other.Fence != 0 {
			t.Errorf("b while a holds: %+v", other)
		}
		advance(t, ctx, s, 10*time.Second)
		again := claim("a")
		if again.Fence != first.Fence+1 {
			t.Errorf("a after its lease ran out: fence %d, want %d (a new tenure)", again.Fence, first.Fence+1)
		}
		if err := s.ReleaseDuty(ctx, "cron", "a"); err != nil {
			t.Fatal(err)
		}
		if b := claim("b"); !b.Held || b.Fence != again.Fence+1 {
			t.Errorf("b after a released: %+v, want fence %d", b, again.Fence+1)
		}
	}},
	{"Corrupt/ClaimDuty", func(t *testing.T, s *headgate.Store) {
		assertCorruptionSafe(t, s, corruptCheck{
			setup: func(t testing.TB, ctx context.Context, s *headgate.Store) {
				mustClaimDuty(t, ctx, s, "a")
				advance(t, ctx, s, 10*time.Second)
			},
			keys: keysNamed("duty:"),
			call: func(ctx context.Context, s *headgate.Store) error {
				_, err := s.ClaimDuty(ctx, "reclaim", "b", 10*time.Second)
				return err
			},
			// A corrupt duty lease holds nobody: b takes it.
			progressed: func(t testing.TB, ctx context.Context, s *headgate.Store, _ string) {
				if ok, err := s.ClaimDuty(ctx, "reclaim", "c", 10*time.Second); err != nil || ok {
					t.Errorf("after b's claim, c claimed the duty: %v, %v", ok, err)
				}
			},
		})
	}},
}

func mustClaimDuty(t testing.TB, ctx context.Context, s *headgate.Store, holder string) {
	t.Helper()
	if ok, err := s.ClaimDuty(ctx, "reclaim", holder, 10*time.Second); err != nil || !ok {
		t.Fatalf("claim duty for %s: %v, %v", holder, ok, err)
	}
}

package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// dutyCases cover the Duty transition of the job contract.
var dutyCases = []conformanceCase{
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
}

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
}

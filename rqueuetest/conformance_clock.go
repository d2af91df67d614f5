package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// clockCases cover the store clock (clock.go: FreezeClock, AdvanceClock, UnfreezeClock,
// Now), which every script reads and none owns: it has no script of its own.
var clockCases = []conformanceCase{
	{"Clock/FreezeAdvanceUnfreeze", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if now, err := s.Now(ctx); err != nil || !now.Equal(epoch) {
			t.Errorf("frozen now %v (err %v)", now, err)
		}
		advance(t, ctx, s, 90*time.Second)
		if now, err := s.Now(ctx); err != nil || !now.Equal(epoch.Add(90*time.Second)) {
			t.Errorf("advanced now %v (err %v)", now, err)
		}
		if err := s.UnfreezeClock(ctx); err != nil {
			t.Fatal(err)
		}
		if now, err := s.Now(ctx); err != nil || now.Year() < 2024 {
			t.Errorf("unfrozen now %v is not the server's time (err %v)", now, err)
		}
	}},
}

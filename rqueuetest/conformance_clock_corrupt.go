package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// clockCorruptCases: every script reads the store clock before its first write, so a
// frozen clock that is not a time fails the call with nothing written. Cross-cutting: one
// case holds enqueue, admit and promote to it.
var clockCorruptCases = []conformanceCase{
	{"Clock/CorruptFrozenValueWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		if err := s.Client().Set(ctx, nsKey(s, "clock"), "soon", 0).Err(); err != nil {
			t.Fatal(err)
		}
		unchanged(t, ctx, s, "enqueue on a corrupt clock", func() error {
			_, err := s.Enqueue(ctx, job("b"))
			return err
		})
		unchanged(t, ctx, s, "admit on a corrupt clock", func() error {
			_, err := s.Admit(ctx, admitReq("w1", 10))
			return err
		})
		unchanged(t, ctx, s, "promote on a corrupt clock", func() error {
			_, _, err := s.PromoteDue(ctx, 10)
			return err
		})
		if err := s.FreezeClock(ctx, epoch.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		admitOne(t, ctx, s)
	}},
}

package rqueuetest

import (
	"context"
	"testing"

	"github.com/headgate/headgate"
)

// writeProgressCases cover WriteProgress (lua/write_progress.lua): the holder's progress,
// stamped with its fence and the store clock.
var writeProgressCases = []conformanceCase{
	{"WriteProgress/HolderOnlyStamped", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
		p, err := s.WriteProgress(ctx, c.LeaseRef(), headgate.Progress{Current: 3, Total: 10, Message: "m"})
		if err != nil || p.Fence != c.Fence || !p.UpdatedAt.Equal(epoch) {
			t.Errorf("write progress: %+v, %v", p, err)
		}
		if got, err := s.JobProgress(ctx, "a"); err != nil || got == nil || got.Current != 3 || got.Total != 10 || got.Message != "m" {
			t.Errorf("read progress: %+v (err %v)", got, err)
		}
		err = unchanged(t, ctx, s, "stale progress", func() error {
			_, err := s.WriteProgress(ctx, staleLease(c), headgate.Progress{Current: 1})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
	{"Corrupt/WriteProgress", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		_, err := s.WriteProgress(ctx, l, headgate.Progress{Current: 2, Total: 3, Message: "m"})
		return err
	})},
}

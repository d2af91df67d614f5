package rqueuetest

import (
	"context"
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// checkpointCases cover Checkpoint (lua/checkpoint.lua): the holder records its step in
// progress and the steps done.
var checkpointCases = []conformanceCase{
	{"Checkpoint/KeptForTheNextAttempt", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
		if err := s.Checkpoint(ctx, c.LeaseRef(), headgate.Checkpoint{InProgress: "charge", Done: []string{"load"}}); err != nil {
			t.Fatal(err)
		}
		if cp := getJob(t, ctx, s, "a").Checkpoint; cp.InProgress != "charge" || !slices.Equal(cp.Done, []string{"load"}) {
			t.Errorf("after the first checkpoint: %+v", cp)
		}
		// A checkpoint replaces the last one whole.
		if err := s.Checkpoint(ctx, c.LeaseRef(), headgate.Checkpoint{Done: []string{"load", "charge"}}); err != nil {
			t.Fatal(err)
		}
		if cp := getJob(t, ctx, s, "a").Checkpoint; cp.InProgress != "" || !slices.Equal(cp.Done, []string{"load", "charge"}) {
			t.Errorf("after the second checkpoint: %+v", cp)
		}
		// The next attempt starts from it.
		mustAck(t, ctx, s, c, headgate.OutcomeHandBack, nil)
		next := admitOne(t, ctx, s)
		if next.Checkpoint.InProgress != "" || !slices.Equal(next.Checkpoint.Done, []string{"load", "charge"}) {
			t.Errorf("the next attempt's claim carries %+v", next.Checkpoint)
		}
	}},
	{"Checkpoint/HolderOnly", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
		err := unchanged(t, ctx, s, "stale checkpoint", func() error {
			return s.Checkpoint(ctx, staleLease(c), headgate.Checkpoint{InProgress: "x"})
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
	{"Corrupt/Checkpoint", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		return s.Checkpoint(ctx, l, headgate.Checkpoint{InProgress: "b", Done: []string{"a"}})
	})},
}

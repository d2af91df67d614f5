package rqueuetest

import (
	"context"
	"testing"

	"github.com/headgate/headgate"
)

// checkpointCases cover Checkpoint (lua/checkpoint.lua): the holder records its step in
// progress and the steps done.
var checkpointCases = []conformanceCase{
	{"Checkpoint/HolderOnly", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		err := unchanged(t, ctx, s, "stale checkpoint", func() error {
			return s.Checkpoint(ctx, staleLease(c), headgate.Checkpoint{InProgress: "x"})
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
	{"Corrupt/Checkpoint", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		return s.Checkpoint(ctx, l, headgate.Checkpoint{InProgress: "b", Done: []string{"a"}})
	})},
}

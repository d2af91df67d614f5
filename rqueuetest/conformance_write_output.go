package rqueuetest

import (
	"context"
	"testing"

	"github.com/headgate/headgate"
)

// writeOutputCases cover WriteOutput (lua/write_output.lua): the holder's output, stamped
// with its fence and the store clock.
var writeOutputCases = []conformanceCase{
	{"WriteOutput/HolderOnlyStamped", func(t *testing.T, s *headgate.Store) {
		ctx, c := heldJob(t, s)
		out, err := s.WriteOutput(ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")})
		if err != nil || out.Fence != c.Fence || !out.UpdatedAt.Equal(epoch) {
			t.Errorf("write output: %+v, %v", out, err)
		}
		if got, err := s.JobOutput(ctx, "a"); err != nil || got == nil || string(got.Bytes) != "o" {
			t.Errorf("read output: %+v (err %v)", got, err)
		}
		err = unchanged(t, ctx, s, "stale output", func() error {
			_, err := s.WriteOutput(ctx, staleLease(c), headgate.Blob{SchemaVersion: 1, Bytes: []byte("x")})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
	{"Corrupt/WriteOutput", holderCallCorrupt(func(ctx context.Context, s *headgate.Store, l headgate.LeaseRef) error {
		_, err := s.WriteOutput(ctx, l, headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")})
		return err
	})},
}

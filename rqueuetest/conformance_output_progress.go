package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// outputProgressCases cover the OutputProgress transition of the job contract.
var outputProgressCases = []conformanceCase{
	{"OutputProgress/HolderOnlyStamped", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		c := admitOne(t, ctx, s)
		out, err := s.WriteOutput(ctx, c.LeaseRef(), headgate.Blob{SchemaVersion: 1, Bytes: []byte("o")})
		if err != nil || out.Fence != c.Fence || !out.UpdatedAt.Equal(epoch) {
			t.Errorf("write output: %+v, %v", out, err)
		}
		p, err := s.WriteProgress(ctx, c.LeaseRef(), headgate.Progress{Current: 3, Total: 10, Message: "m"})
		if err != nil || p.Fence != c.Fence || !p.UpdatedAt.Equal(epoch) {
			t.Errorf("write progress: %+v, %v", p, err)
		}
		if got, err := s.JobOutput(ctx, "a"); err != nil || got == nil || string(got.Bytes) != "o" {
			t.Errorf("read output: %+v (err %v)", got, err)
		}
		if got, err := s.JobProgress(ctx, "a"); err != nil || got == nil || got.Current != 3 || got.Total != 10 || got.Message != "m" {
			t.Errorf("read progress: %+v (err %v)", got, err)
		}
		stale := c.LeaseRef()
		stale.Fence--
		err = unchanged(t, ctx, s, "stale output", func() error {
			_, err := s.WriteOutput(ctx, stale, headgate.Blob{SchemaVersion: 1, Bytes: []byte("x")})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
		err = unchanged(t, ctx, s, "stale progress", func() error {
			_, err := s.WriteProgress(ctx, stale, headgate.Progress{Current: 1})
			return err
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
		err = unchanged(t, ctx, s, "stale checkpoint", func() error {
			return s.Checkpoint(ctx, stale, headgate.Checkpoint{InProgress: "x"})
		})
		wantErr[*headgate.LeaseRejectedError](t, err)
	}},
}

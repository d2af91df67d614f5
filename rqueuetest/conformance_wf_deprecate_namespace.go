package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// wfDeprecateNamespaceCases cover Registry.Deprecate (lua/wf_deprecate_namespace.lua).
var wfDeprecateNamespaceCases = []conformanceCase{
	// seed: deprecate_sets_state_and_is_idempotent
	{"WfRegistry/DeprecateIdempotent", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		mustRegister(t, ctx, r, "orders", headgate.NamespaceWorkerMint)
		for range 2 {
			if err := r.Deprecate(ctx, "orders"); err != nil {
				t.Errorf("deprecate: %v", err)
			}
			if rec := mustNamespace(t, ctx, r, "orders"); rec.State != headgate.NamespaceDeprecated {
				t.Errorf("state %s, want deprecated", rec.State)
			}
		}
		if err := r.Deprecate(ctx, "never-seen"); err != nil {
			t.Errorf("deprecate absent: %v", err)
		}
		if rec, err := r.Get(ctx, "never-seen"); err != nil || rec != nil {
			t.Errorf("deprecate minted %+v (%v)", rec, err)
		}
	}},
}

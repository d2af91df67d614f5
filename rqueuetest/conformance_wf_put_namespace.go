package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfPutNamespaceCases cover Registry.Put (lua/wf_put_namespace.lua): a whole record,
// written once.
var wfPutNamespaceCases = []conformanceCase{
	// seed: put_namespace_is_idempotent_on_existing_name
	{"WfRegistry/PutIdempotent", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		now := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
		rec := headgate.NamespaceRecord{Name: "billing", Origin: headgate.NamespaceExplicit, CreatedAt: now,
			Config: headgate.NamespaceConfig{Kind: "tenant"}}
		if o, err := r.Put(ctx, rec); err != nil || o != headgate.MintCreated {
			t.Errorf("put: %s %v", o, err)
		}
		replacement := headgate.NamespaceRecord{Name: "billing", Origin: headgate.NamespaceWorkerMint, CreatedAt: now}
		if o, err := r.Put(ctx, replacement); err != nil || o != headgate.MintAlreadyExisted {
			t.Errorf("second put: %s %v, want already existed", o, err)
		}
		stored := mustNamespace(t, ctx, r, "billing")
		if stored.Origin != headgate.NamespaceExplicit || stored.Config.Kind != "tenant" || !stored.CreatedAt.Equal(now) {
			t.Errorf("stored %+v, want the first record", stored)
		}
	}},
}

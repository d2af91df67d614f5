package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// wfRegisterNamespaceCases cover Registry.Register (lua/wf_register_namespace.lua): a
// namespace is created once; a second register touches its last seen time only.
var wfRegisterNamespaceCases = []conformanceCase{
	// seed: register_creates_if_absent_and_persists
	{"WfRegistry/RegisterCreates", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		if o, err := r.Register(ctx, "orders", headgate.NamespaceWorkerMint); err != nil || o != headgate.MintCreated {
			t.Errorf("register: %s %v, want created", o, err)
		}
		rec := mustNamespace(t, ctx, r, "orders")
		if rec.Name != "orders" || rec.Origin != headgate.NamespaceWorkerMint || rec.State != headgate.NamespaceActive ||
			!rec.CreatedAt.Equal(rec.LastSeen) || rec.CreatedAt.IsZero() {
			t.Errorf("record %+v", rec)
		}
	}},
	// seed: second_register_already_existed_bumps_last_seen_only
	{"WfRegistry/SecondRegisterBumpsLastSeenOnly", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		if o, err := r.Register(ctx, "orders", headgate.NamespaceWorkerMint); err != nil || o != headgate.MintCreated {
			t.Errorf("first register: %s %v", o, err)
		}
		original := mustNamespace(t, ctx, r, "orders")
		if o, err := r.Register(ctx, "orders", headgate.NamespaceExplicit); err != nil || o != headgate.MintAlreadyExisted {
			t.Errorf("second register: %s %v, want already existed", o, err)
		}
		touched := mustNamespace(t, ctx, r, "orders")
		if !touched.CreatedAt.Equal(original.CreatedAt) || touched.Origin != headgate.NamespaceWorkerMint ||
			touched.LastSeen.Before(original.LastSeen) {
			t.Errorf("after re-register %+v, was %+v", touched, original)
		}
	}},
	{"WfRegistry/InvalidAndOwnSlot", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		if _, err := r.Register(ctx, "", headgate.NamespaceExplicit); err == nil {
			t.Errorf("an empty name was registered")
		}
		if _, err := r.Register(ctx, "x", "bogus"); err == nil {
			t.Errorf("an unknown origin was registered")
		}
		if _, err := r.SetPlacement(ctx, "x", headgate.NamespacePlacement{Mode: "bogus"}); err == nil {
			t.Errorf("an unknown placement was accepted")
		}
		// The registry's keys are not the namespace's: registering writes nothing there.
		writesNothing(t, ctx, s, "the registry (in the store's namespace)", func() {
			mustRegister(t, ctx, r, "orders", headgate.NamespaceExplicit)
		})
	}},
}

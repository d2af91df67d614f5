package rqueuetest

import (
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfSetNamespacePlacementCases cover Registry.SetPlacement
// (lua/wf_set_namespace_placement.lua).
var wfSetNamespacePlacementCases = []conformanceCase{
	// seed: set_placement_updates_only_placement_and_reports_not_found
	{"WfRegistry/SetPlacementOnlyPlacementNotFound", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		mustRegister(t, ctx, r, "orders", headgate.NamespaceExplicit)
		original := mustNamespace(t, ctx, r, "orders")
		if original.Placement.Mode != headgate.PlacementUnplaced {
			t.Errorf("new namespace placement %+v, want unplaced", original.Placement)
		}
		p := headgate.NamespacePlacement{Mode: headgate.PlacementPrefer, Nodes: []string{"n1", "n2"}}
		if ok, err := r.SetPlacement(ctx, "orders", p); err != nil || !ok {
			t.Errorf("set placement: %v %v", ok, err)
		}
		updated := mustNamespace(t, ctx, r, "orders")
		if !slices.Equal(updated.Placement.Nodes, p.Nodes) || updated.Placement.Mode != p.Mode {
			t.Errorf("placement %+v, want %+v", updated.Placement, p)
		}
		if updated.Origin != original.Origin || !updated.CreatedAt.Equal(original.CreatedAt) || updated.State != original.State {
			t.Errorf("set placement changed more than placement: %+v -> %+v", original, updated)
		}
		if updated.LastSeen.Before(original.LastSeen) {
			t.Errorf("last seen went back")
		}
		if ok, err := r.SetPlacement(ctx, "orders", p); err != nil || !ok {
			t.Errorf("re-apply placement: %v %v", ok, err)
		}
		if ok, err := r.SetPlacement(ctx, "ghost", headgate.NamespacePlacement{Mode: headgate.PlacementUnplaced}); err != nil || ok {
			t.Errorf("placement of an absent namespace: %v %v, want not found", ok, err)
		}
		if rec, err := r.Get(ctx, "ghost"); err != nil || rec != nil {
			t.Errorf("placement minted %+v (%v)", rec, err)
		}
	}},
}

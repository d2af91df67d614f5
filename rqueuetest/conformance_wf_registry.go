package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/redis/go-redis/v9"
)

// newRegistry returns a namespace registry kept apart for one test (scoped by the store's
// fresh namespace) and deletes its keys at cleanup.
func newRegistry(t testing.TB, s *headgate.Store) *headgate.Registry {
	t.Helper()
	r, err := headgate.NewRegistry(s.Client(), &headgate.RegistryConfig{Scope: s.Namespace()})
	if err != nil {
		t.Fatalf("new registry: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pattern := "hg:{registry:" + s.Namespace() + "}:*"
		del := func(ctx context.Context, c redis.UniversalClient) error {
			iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
			return iter.Err()
		}
		if cc, ok := s.Client().(*redis.ClusterClient); ok {
			cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return del(ctx, c) })
			return
		}
		del(ctx, s.Client())
	})
	return r
}

func mustNamespace(t testing.TB, ctx context.Context, r *headgate.Registry, name string) *headgate.NamespaceRecord {
	t.Helper()
	rec, err := r.Get(ctx, name)
	if err != nil {
		t.Fatalf("get namespace %s: %v", name, err)
	}
	if rec == nil {
		t.Fatalf("namespace %s is not registered", name)
	}
	return rec
}

// wfRegistryCases cover the namespace registry (seed 003's namespace_tests).
var wfRegistryCases = []conformanceCase{
	// seed: set_placement_updates_only_placement_and_reports_not_found
	{"WfRegistry/SetPlacementOnlyPlacementNotFound", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
		if _, err := r.Register(ctx, "orders", headgate.NamespaceExplicit); err != nil {
			t.Fatalf("register: %v", err)
		}
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
	// seed: register_creates_if_absent_and_persists
	{"WfRegistry/RegisterCreates", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
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
		ctx := ctxFor(t)
		r := newRegistry(t, s)
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
	// seed: put_namespace_is_idempotent_on_existing_name
	{"WfRegistry/PutIdempotent", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
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
	// seed: list_orders_by_created_at_then_name
	{"WfRegistry/ListByCreatedThenName", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
		earlier := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
		later := earlier.Add(time.Hour)
		for _, p := range []struct {
			name string
			at   time.Time
		}{{"zeta", earlier}, {"alpha", earlier}, {"beta", later}} {
			if _, err := r.Put(ctx, headgate.NamespaceRecord{Name: p.name, Origin: headgate.NamespaceExplicit, CreatedAt: p.at}); err != nil {
				t.Fatalf("put %s: %v", p.name, err)
			}
		}
		got := allPages(t, "list namespaces", func(c string) ([]*headgate.NamespaceRecord, string, error) { return r.List(ctx, c, 1) })
		var names []string
		for _, rec := range got {
			names = append(names, rec.Name)
		}
		if !equalStrings(names, []string{"alpha", "zeta", "beta"}) {
			t.Errorf("listed %q, want [alpha zeta beta]", names)
		}
	}},
	// seed: get_returns_none_for_absent_name
	{"WfRegistry/GetAbsent", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
		if rec, err := r.Get(ctx, "missing"); err != nil || rec != nil {
			t.Errorf("get absent: %+v %v", rec, err)
		}
	}},
	// seed: deprecate_sets_state_and_is_idempotent
	{"WfRegistry/DeprecateIdempotent", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
		if _, err := r.Register(ctx, "orders", headgate.NamespaceWorkerMint); err != nil {
			t.Fatalf("register: %v", err)
		}
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
	{"WfRegistry/InvalidAndOwnSlot", func(t *testing.T, s *headgate.Store) {
		ctx := ctxFor(t)
		r := newRegistry(t, s)
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
		before := snapshot(t, ctx, s)
		if _, err := r.Register(ctx, "orders", headgate.NamespaceExplicit); err != nil {
			t.Fatalf("register: %v", err)
		}
		if snapshot(t, ctx, s) != before {
			t.Errorf("the registry wrote into the store's namespace")
		}
	}},
}

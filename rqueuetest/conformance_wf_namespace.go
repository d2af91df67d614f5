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
// fresh namespace), and a context for the test's calls; it deletes the registry's keys at
// cleanup.
func newRegistry(t testing.TB, s *headgate.Store) (context.Context, *headgate.Registry) {
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
	return ctxFor(t), r
}

// mustRegister registers a namespace, failing the test on an error.
func mustRegister(t testing.TB, ctx context.Context, r *headgate.Registry, name string, origin headgate.NamespaceOrigin) {
	t.Helper()
	if _, err := r.Register(ctx, name, origin); err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
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

// wfNamespaceCases cover the namespace registry's reads (wf_namespace.go: Get, List). Its
// writes are in conformance_wf_register_namespace.go, conformance_wf_put_namespace.go,
// conformance_wf_set_namespace_placement.go and conformance_wf_deprecate_namespace.go; the
// cases follow seed 003's namespace_tests.
var wfNamespaceCases = []conformanceCase{
	// seed: list_orders_by_created_at_then_name
	{"WfRegistry/ListByCreatedThenName", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
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
		if !slices.Equal(names, []string{"alpha", "zeta", "beta"}) {
			t.Errorf("listed %q, want [alpha zeta beta]", names)
		}
	}},
	// seed: get_returns_none_for_absent_name
	{"WfRegistry/GetAbsent", func(t *testing.T, s *headgate.Store) {
		ctx, r := newRegistry(t, s)
		if rec, err := r.Get(ctx, "missing"); err != nil || rec != nil {
			t.Errorf("get absent: %+v %v", rec, err)
		}
	}},
}

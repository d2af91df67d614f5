package rqueuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfPutPackageCases cover PutPackage and PutPackageWithRoutes (lua/wf_put_package.lua):
// package records, listed in deploy order, and the route the last put of a type sets.
var wfPutPackageCases = []conformanceCase{
	{"WfPackage/PutListRoutes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		t0 := epoch.Add(-time.Hour)
		mustPutPackages(t, ctx, s,
			headgate.PackageRecord{WorkflowType: "checkout", ContentHash: "bbb", DeployedAt: t0, Manifest: []byte("m1")},
			headgate.PackageRecord{WorkflowType: "billing", ContentHash: "aaa", DeployedAt: t0},
			headgate.PackageRecord{WorkflowType: "checkout", ContentHash: "aaa", DeployedAt: t0},
			headgate.PackageRecord{WorkflowType: "audit", ContentHash: "zzz"}, // deployed now (the store clock): last
		)
		got := packagesListed(t, ctx, s, 1)
		var order []string
		for _, p := range got {
			order = append(order, p.WorkflowType+"/"+p.ContentHash)
		}
		if want := []string{"billing/aaa", "checkout/aaa", "checkout/bbb", "audit/zzz"}; !slices.Equal(order, want) {
			t.Errorf("packages %q, want %q (deployed, type, hash)", order, want)
		}
		if len(got) == 4 && (string(got[2].Manifest) != "m1" || !got[3].DeployedAt.Equal(epoch)) {
			t.Errorf("records %+v", got)
		}
		// The last put of a type routes it.
		if h, err := s.PackageRouteOf(ctx, "checkout"); err != nil || h != "aaa" {
			t.Errorf("route of checkout: %q %v", h, err)
		}
		if err := s.PutPackageWithRoutes(ctx, headgate.PackageRecord{WorkflowType: "checkout", ContentHash: "ccc", DeployedAt: t0},
			[]string{"checkout", "checkout-v2"}); err != nil {
			t.Fatalf("put with routes: %v", err)
		}
		if err := s.PutPackageRoute(ctx, "billing", "bbb"); err != nil {
			t.Fatalf("put route: %v", err)
		}
		routes := routesListed(t, ctx, s, 2)
		want := []headgate.PackageRoute{{WorkflowType: "audit", ContentHash: "zzz"}, {WorkflowType: "billing", ContentHash: "bbb"},
			{WorkflowType: "checkout", ContentHash: "ccc"}, {WorkflowType: "checkout-v2", ContentHash: "ccc"}}
		if !slices.Equal(routes, want) {
			t.Errorf("routes %+v, want %+v", routes, want)
		}
		// Delete removes the record, not the route.
		if ok, err := s.DeletePackage(ctx, "checkout", "ccc"); err != nil || !ok {
			t.Errorf("delete: %v %v", ok, err)
		}
		if ok, err := s.DeletePackage(ctx, "checkout", "ccc"); err != nil || ok {
			t.Errorf("delete again: %v %v, want false", ok, err)
		}
		if h, err := s.PackageRouteOf(ctx, "checkout"); err != nil || h != "ccc" {
			t.Errorf("route after delete: %q %v", h, err)
		}
		if n := len(packagesListed(t, ctx, s, 10)); n != 4 {
			t.Errorf("%d packages after delete, want 4", n)
		}
		if h, err := s.PackageRouteOf(ctx, "nothing"); err != nil || h != "" {
			t.Errorf("route of an unrouted type: %q %v", h, err)
		}
		err := unchanged(t, ctx, s, "package without a hash", func() error {
			return s.PutPackage(ctx, headgate.PackageRecord{WorkflowType: "x"})
		})
		wantErr[*headgate.InvalidError](t, err)
	}},
}

// mustPutPackages puts each record in turn, failing the test on an error.
func mustPutPackages(t testing.TB, ctx context.Context, s *headgate.Store, recs ...headgate.PackageRecord) {
	t.Helper()
	for _, r := range recs {
		if err := s.PutPackage(ctx, r); err != nil {
			t.Fatalf("put package %s/%s: %v", r.WorkflowType, r.ContentHash, err)
		}
	}
}

// packagesListed reads the package listing to its end, pages of size records.
func packagesListed(t testing.TB, ctx context.Context, s *headgate.Store, size int) []headgate.PackageRecord {
	t.Helper()
	return allPages(t, "list packages", func(c string) ([]headgate.PackageRecord, string, error) { return s.ListPackages(ctx, c, size) })
}

// routesListed reads the package routes to their end, pages of size routes.
func routesListed(t testing.TB, ctx context.Context, s *headgate.Store, size int) []headgate.PackageRoute {
	t.Helper()
	return allPages(t, "list routes", func(c string) ([]headgate.PackageRoute, string, error) { return s.ListPackageRoutes(ctx, c, size) })
}

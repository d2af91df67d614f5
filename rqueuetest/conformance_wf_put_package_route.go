package rqueuetest

import (
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfPutPackageRouteCases cover PutPackageRoute (lua/wf_put_package_route.lua): a workflow
// type's one route to a package version.
var wfPutPackageRouteCases = []conformanceCase{
	{"WfPackage/RouteReplacesTheTypesRoute", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, r := range [][2]string{{"checkout", "aaa"}, {"billing", "aaa"}, {"checkout", "bbb"}} {
			if err := s.PutPackageRoute(ctx, r[0], r[1]); err != nil {
				t.Fatalf("route %s to %s: %v", r[0], r[1], err)
			}
		}
		if h, err := s.PackageRouteOf(ctx, "checkout"); err != nil || h != "bbb" {
			t.Errorf("route of checkout: %q %v, want the second, bbb", h, err)
		}
		routes := routesListed(t, ctx, s, 1)
		want := []headgate.PackageRoute{{WorkflowType: "billing", ContentHash: "aaa"}, {WorkflowType: "checkout", ContentHash: "bbb"}}
		if !slices.Equal(routes, want) {
			t.Errorf("routes %+v, want %+v", routes, want)
		}
		// A route names a version; it writes no package record.
		if got := packagesListed(t, ctx, s, 10); len(got) != 0 {
			t.Errorf("a route wrote package records: %+v", got)
		}
		for name, r := range map[string][2]string{"no type": {"", "aaa"}, "no hash": {"checkout", ""}, "hash with brace": {"checkout", "a{b}"}} {
			err := unchanged(t, ctx, s, "route with "+name, func() error { return s.PutPackageRoute(ctx, r[0], r[1]) })
			wantErr[*headgate.InvalidError](t, err)
		}
	}},
}

package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfDeletePackageCases cover DeletePackage (lua/wf_delete_package.lua): a package record
// goes, the routes to it stay.
var wfDeletePackageCases = []conformanceCase{
	{"WfPackage/DeleteKeepsTheRoute", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		t0 := epoch.Add(-time.Hour)
		mustPutPackages(t, ctx, s, headgate.PackageRecord{WorkflowType: "checkout", ContentHash: "aaa", DeployedAt: t0},
			headgate.PackageRecord{WorkflowType: "checkout", ContentHash: "bbb", DeployedAt: t0})
		if ok, err := s.DeletePackage(ctx, "checkout", "bbb"); err != nil || !ok {
			t.Errorf("delete: %v %v, want true", ok, err)
		}
		got := packagesListed(t, ctx, s, 10)
		if len(got) != 1 || got[0].ContentHash != "aaa" {
			t.Errorf("packages after delete: %+v, want checkout/aaa alone", got)
		}
		if h, err := s.PackageRouteOf(ctx, "checkout"); err != nil || h != "bbb" {
			t.Errorf("route after delete: %q %v, want bbb still", h, err)
		}
		writesNothing(t, ctx, s, "a delete of no package", func() {
			for _, k := range [][2]string{{"checkout", "bbb"}, {"billing", "aaa"}} {
				if ok, err := s.DeletePackage(ctx, k[0], k[1]); err != nil || ok {
					t.Errorf("delete of absent %s/%s: %v %v, want false", k[0], k[1], ok, err)
				}
			}
		})
		err := unchanged(t, ctx, s, "delete without a hash", func() error { _, err := s.DeletePackage(ctx, "checkout", ""); return err })
		wantErr[*headgate.InvalidError](t, err)
	}},
}

package rqueuetest

import (
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfDeleteWorkerDeploymentCases cover DeleteWorkerDeployment
// (lua/wf_delete_worker_deployment.lua): it returns what was stored.
var wfDeleteWorkerDeploymentCases = []conformanceCase{
	{"WfDeployment/DeleteReturnsWhatWasStored", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, name := range []string{"blue", "green"} {
			if _, _, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: name, Versions: []string{"v1"}}); err != nil {
				t.Fatalf("put %s: %v", name, err)
			}
		}
		if _, err := s.SetDesiredState(ctx, "blue", headgate.DesiredDraining); err != nil {
			t.Fatal(err)
		}
		existed, d, err := s.DeleteWorkerDeployment(ctx, "blue")
		if err != nil || !existed || d == nil || d.Name != "blue" || d.Desired != headgate.DesiredDraining ||
			!slices.Equal(d.Versions, []string{"v1"}) {
			t.Errorf("delete: %v %+v %v", existed, d, err)
		}
		if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got != nil {
			t.Errorf("get after delete: %+v %v", got, err)
		}
		l, next, err := s.ListWorkerDeployments(ctx, "", 10)
		if err != nil || next != "" || len(l.Deployments) != 1 || l.Deployments[0].Name != "green" || len(l.Undecodable) != 0 {
			t.Errorf("listing after delete: %+v %q %v, want green alone", l, next, err)
		}
		writesNothing(t, ctx, s, "a delete of no deployment", func() {
			if existed, d, err := s.DeleteWorkerDeployment(ctx, "blue"); err != nil || existed || d != nil {
				t.Errorf("delete again: %v %+v %v", existed, d, err)
			}
		})
	}},
}

package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfPutWorkerDeploymentCases cover PutWorkerDeployment (lua/wf_put_worker_deployment.lua):
// a put takes the new spec and keeps the creation time and desired state.
var wfPutWorkerDeploymentCases = []conformanceCase{
	{"WfDeployment/PutPreservesDesiredDelete", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		o, d, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1"}})
		if err != nil || o != headgate.PutCreated || d.Desired != headgate.DesiredActive || !d.CreatedAt.Equal(epoch) {
			t.Fatalf("create: %s %+v %v", o, d, err)
		}
		advance(t, ctx, s, time.Minute)
		d, err = s.SetDesiredState(ctx, "blue", headgate.DesiredDraining)
		if err != nil || d == nil || d.Desired != headgate.DesiredDraining || !d.DesiredChangedAt.Equal(epoch.Add(time.Minute)) ||
			!slices.Equal(d.Versions, []string{"v1"}) {
			t.Errorf("set desired: %+v %v", d, err)
		}
		advance(t, ctx, s, time.Minute)
		// A put takes the new spec and keeps creation time and desired state.
		o, d, err = s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1", "v2"},
			Desired: headgate.DesiredActive})
		if err != nil || o != headgate.PutReplaced || d.Desired != headgate.DesiredDraining || !d.CreatedAt.Equal(epoch) ||
			!d.UpdatedAt.Equal(epoch.Add(2*time.Minute)) || !slices.Equal(d.Versions, []string{"v1", "v2"}) {
			t.Errorf("replace: %s %+v %v", o, d, err)
		}
		if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got == nil || got.Desired != headgate.DesiredDraining {
			t.Errorf("get: %+v %v", got, err)
		}
		if d, err := s.SetDesiredState(ctx, "ghost", headgate.DesiredDrained); err != nil || d != nil {
			t.Errorf("set desired of an absent deployment: %+v %v", d, err)
		}
		existed, d, err := s.DeleteWorkerDeployment(ctx, "blue")
		if err != nil || !existed || d == nil || d.Name != "blue" {
			t.Errorf("delete: %v %+v %v", existed, d, err)
		}
		if existed, d, err := s.DeleteWorkerDeployment(ctx, "blue"); err != nil || existed || d != nil {
			t.Errorf("delete again: %v %+v %v", existed, d, err)
		}
		if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got != nil {
			t.Errorf("get after delete: %+v %v", got, err)
		}
	}},
}

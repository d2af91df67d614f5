package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfSetDesiredStateCases cover SetDesiredState (lua/wf_set_desired_state.lua): the desired
// state changes, stamped; the spec and creation time stay.
var wfSetDesiredStateCases = []conformanceCase{
	{"WfDeployment/SetDesiredKeepsTheSpec", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if _, _, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1", "v2"}}); err != nil {
			t.Fatalf("put: %v", err)
		}
		for i, desired := range []headgate.DesiredState{headgate.DesiredDraining, headgate.DesiredDrained, headgate.DesiredActive} {
			advance(t, ctx, s, time.Minute)
			now := epoch.Add(time.Duration(i+1) * time.Minute)
			d, err := s.SetDesiredState(ctx, "blue", desired)
			if err != nil || d == nil || d.Desired != desired || !d.DesiredChangedAt.Equal(now) || !d.CreatedAt.Equal(epoch) ||
				!slices.Equal(d.Versions, []string{"v1", "v2"}) {
				t.Errorf("set %s: %+v %v", desired, d, err)
			}
			if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got == nil || got.Desired != desired {
				t.Errorf("get after set %s: %+v %v", desired, got, err)
			}
		}
		writesNothing(t, ctx, s, "a set of no deployment", func() {
			if d, err := s.SetDesiredState(ctx, "ghost", headgate.DesiredDrained); err != nil || d != nil {
				t.Errorf("set desired of an absent deployment: %+v %v, want nil", d, err)
			}
		})
		err := unchanged(t, ctx, s, "an unknown desired state", func() error {
			_, err := s.SetDesiredState(ctx, "blue", "paused")
			return err
		})
		wantErr[*headgate.InvalidError](t, err)
	}},
}

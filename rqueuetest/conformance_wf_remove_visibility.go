package rqueuetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfRemoveVisibilityCases cover RemoveVisibility (lua/wf_remove_visibility.lua), guarded by
// the run id, after RecordVisibility's upserts (lua/wf_record_visibility.lua).
var wfRemoveVisibilityCases = []conformanceCase{
	{"WfVisibility/UpsertGetRemoveByRun", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustRecord(t, ctx, s, visRecord("wf-1", "run-1", "checkout", headgate.WorkflowRunning, 1))
		r, err := s.GetVisibility(ctx, "wf-1")
		if err != nil || r.RunID != "run-1" || r.Status != headgate.WorkflowRunning || !r.StartedAt.Equal(at(1)) ||
			string(r.Memo) != `{"m":1}` || !r.UpdatedAt.Equal(epoch) || r.PackageVersion != "pkg-a" {
			t.Errorf("get: %+v %v", r, err)
		}
		// A new run's row replaces its predecessor's.
		mustRecord(t, ctx, s, visRecord("wf-1", "run-2", "checkout", headgate.WorkflowCompleted, 5))
		if got := listAll(t, ctx, s, headgate.WorkflowListRequest{}); !slices.Equal(got, []string{"wf-1"}) {
			t.Errorf("listing after the new run: %q", got)
		}
		if got := listAll(t, ctx, s, headgate.WorkflowListRequest{Status: headgate.WorkflowRunning}); len(got) != 0 {
			t.Errorf("the predecessor's status still lists it: %q", got)
		}
		// Remove is guarded by run id: the old run's prune removes nothing.
		writesNothing(t, ctx, s, "a guarded remove", func() {
			if ok, err := s.RemoveVisibility(ctx, "wf-1", "run-1"); err != nil || ok {
				t.Errorf("remove by the old run: %v %v, want false", ok, err)
			}
		})
		if ok, err := s.RemoveVisibility(ctx, "wf-1", "run-2"); err != nil || !ok {
			t.Errorf("remove by the current run: %v %v, want true", ok, err)
		}
		if _, err := s.GetVisibility(ctx, "wf-1"); !errors.Is(err, headgate.ErrWorkflowNotFound) {
			t.Errorf("get after remove: %v", err)
		}
		if got := listAll(t, ctx, s, headgate.WorkflowListRequest{}); len(got) != 0 {
			t.Errorf("listing after remove: %q", got)
		}
		if ok, err := s.RemoveVisibility(ctx, "wf-9", "run-1"); err != nil || ok {
			t.Errorf("remove absent: %v %v", ok, err)
		}
	}},
}

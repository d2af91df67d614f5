package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfRecordVisibilityCases cover RecordVisibility (lua/wf_record_visibility.lua): one row a
// workflow, upserted, and moved in the listing indexes.
var wfRecordVisibilityCases = []conformanceCase{
	{"WfVisibility/RecordUpdatesTheRow", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustRecord(t, ctx, s, visRecord("wf-1", "run-1", "checkout", headgate.WorkflowRunning, 1))
		advance(t, ctx, s, time.Minute)
		closed := visRecord("wf-1", "run-1", "checkout", headgate.WorkflowCompleted, 1)
		closed.ClosedAt = at(9)
		mustRecord(t, ctx, s, closed)
		r, err := s.GetVisibility(ctx, "wf-1")
		if err != nil || r.Status != headgate.WorkflowCompleted || !r.ClosedAt.Equal(at(9)) || !r.StartedAt.Equal(at(1)) ||
			!r.UpdatedAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("get after the update: %+v %v", r, err)
		}
		for status, want := range map[headgate.WorkflowStatus][]string{headgate.WorkflowRunning: nil, headgate.WorkflowCompleted: {"wf-1"}} {
			if got := listAll(t, ctx, s, headgate.WorkflowListRequest{Status: status}); !slices.Equal(got, want) {
				t.Errorf("listing of %s: %q, want %q", status, got, want)
			}
		}
		// A zero start time is the store clock's now.
		now := visRecord("wf-2", "run-1", "checkout", headgate.WorkflowRunning, 0)
		now.StartedAt = time.Time{}
		mustRecord(t, ctx, s, now)
		if r, err := s.GetVisibility(ctx, "wf-2"); err != nil || !r.StartedAt.Equal(epoch.Add(time.Minute)) {
			t.Errorf("started at zero: %+v %v, want the store time", r, err)
		}
		for name, change := range map[string]func(*headgate.VisibilityRecord){
			"no workflow id":    func(r *headgate.VisibilityRecord) { r.WorkflowID = "" },
			"no type":           func(r *headgate.VisibilityRecord) { r.WorkflowType = "" },
			"an unknown status": func(r *headgate.VisibilityRecord) { r.Status = "bogus" },
		} {
			r := visRecord("wf-3", "run-1", "checkout", headgate.WorkflowRunning, 1)
			change(&r)
			err := unchanged(t, ctx, s, "record with "+name, func() error { return s.RecordVisibility(ctx, r) })
			wantErr[*headgate.InvalidError](t, err)
		}
	}},
}

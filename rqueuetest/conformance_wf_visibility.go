package rqueuetest

import (
	"context"
	"errors"
	"testing"

	"github.com/headgate/headgate"
)

func visRecord(id, run, typ string, status headgate.WorkflowStatus, startedSec int) headgate.VisibilityRecord {
	return headgate.VisibilityRecord{WorkflowID: id, RunID: run, WorkflowType: typ, Status: status,
		StartedAt: at(startedSec), PackageVersion: "pkg-a", Memo: []byte(`{"m":1}`)}
}

func mustRecord(t testing.TB, ctx context.Context, s *headgate.Store, r headgate.VisibilityRecord) {
	t.Helper()
	if err := s.RecordVisibility(ctx, r); err != nil {
		t.Fatalf("record visibility of %s: %v", r.WorkflowID, err)
	}
}

func listAll(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.WorkflowListRequest) []string {
	t.Helper()
	var ids []string
	for range 100_000 {
		page, err := s.ListWorkflows(ctx, req)
		if err != nil {
			t.Fatalf("list workflows: %v", err)
		}
		for _, r := range page.Records {
			ids = append(ids, r.WorkflowID)
		}
		if page.NextPageToken == "" {
			return ids
		}
		req.PageToken = page.NextPageToken
	}
	t.Fatalf("list workflows: no end")
	return nil
}

// wfVisibilityCases cover RecordVisibility, GetVisibility, RemoveVisibility, ListWorkflows.
var wfVisibilityCases = []conformanceCase{
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
		if got := listAll(t, ctx, s, headgate.WorkflowListRequest{}); !equalStrings(got, []string{"wf-1"}) {
			t.Errorf("listing after the new run: %q", got)
		}
		if got := listAll(t, ctx, s, headgate.WorkflowListRequest{Status: headgate.WorkflowRunning}); len(got) != 0 {
			t.Errorf("the predecessor's status still lists it: %q", got)
		}
		// Remove is guarded by run id: the old run's prune removes nothing.
		before := snapshot(t, ctx, s)
		if ok, err := s.RemoveVisibility(ctx, "wf-1", "run-1"); err != nil || ok {
			t.Errorf("remove by the old run: %v %v, want false", ok, err)
		}
		if snapshot(t, ctx, s) != before {
			t.Errorf("a guarded remove changed the store")
		}
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
	{"WfVisibility/ListFiltered", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustRecord(t, ctx, s, visRecord("wf-1", "r", "checkout", headgate.WorkflowRunning, 3))
		mustRecord(t, ctx, s, visRecord("wf-2", "r", "checkout", headgate.WorkflowCompleted, 1))
		mustRecord(t, ctx, s, visRecord("wf-3", "r", "billing", headgate.WorkflowFailed, 2))
		child := visRecord("wf-4", "r", "billing", headgate.WorkflowRunning, 4)
		child.ParentWorkflowID = "wf-1"
		mustRecord(t, ctx, s, child)
		for name, c := range map[string]struct {
			req  headgate.WorkflowListRequest
			want []string
		}{
			"all":             {headgate.WorkflowListRequest{}, []string{"wf-2", "wf-3", "wf-1", "wf-4"}},
			"type":            {headgate.WorkflowListRequest{WorkflowType: "checkout"}, []string{"wf-2", "wf-1"}},
			"status":          {headgate.WorkflowListRequest{Status: headgate.WorkflowRunning}, []string{"wf-1", "wf-4"}},
			"type and status": {headgate.WorkflowListRequest{WorkflowType: "billing", Status: headgate.WorkflowRunning}, []string{"wf-4"}},
			"started range":   {headgate.WorkflowListRequest{StartedAfter: at(2), StartedBefore: at(3)}, []string{"wf-3", "wf-1"}},
			"parent":          {headgate.WorkflowListRequest{Parent: "wf-1"}, []string{"wf-4"}},
		} {
			c.req.PageSize = 1
			if got := listAll(t, ctx, s, c.req); !equalStrings(got, c.want) {
				t.Errorf("%s: %q, want %q", name, got, c.want)
			}
		}
		if _, err := s.ListWorkflows(ctx, headgate.WorkflowListRequest{Status: "bogus"}); err == nil {
			t.Errorf("an unknown status filter was accepted")
		}
		err := unchanged(t, ctx, s, "record without a run", func() error {
			return s.RecordVisibility(ctx, visRecord("wf-5", "", "t", headgate.WorkflowRunning, 1))
		})
		wantErr[*headgate.InvalidError](t, err)
	}},
	{"WfVisibility/EqualSortKeysPaged", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const n = 137
		for i := n - 1; i >= 0; i-- {
			mustRecord(t, ctx, s, visRecord(wfID(i), "r", "t", headgate.WorkflowRunning, 7))
		}
		for _, size := range []int{1, 10, 136, 1000} {
			got := listAll(t, ctx, s, headgate.WorkflowListRequest{Status: headgate.WorkflowRunning, PageSize: size})
			if len(got) != n {
				t.Errorf("page size %d: %d rows, want %d", size, len(got), n)
				continue
			}
			for i, id := range got {
				if id != wfID(i) {
					t.Errorf("page size %d: row %d is %s, want %s", size, i, id, wfID(i))
					break
				}
			}
		}
		// A row removed between pages neither breaks the token nor repeats a row.
		page, err := s.ListWorkflows(ctx, headgate.WorkflowListRequest{PageSize: 10})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if ok, err := s.RemoveVisibility(ctx, wfID(9), "r"); err != nil || !ok {
			t.Fatalf("remove the page's last row: %v %v", ok, err)
		}
		next, err := s.ListWorkflows(ctx, headgate.WorkflowListRequest{PageSize: 10, PageToken: page.NextPageToken})
		if err != nil || len(next.Records) != 10 || next.Records[0].WorkflowID != wfID(10) {
			t.Errorf("page after a removed token row: %+v %v", next, err)
		}
	}},
}

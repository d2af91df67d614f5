package rqueuetest

import (
	"context"
	"slices"
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
	return allPages(t, "list workflows", func(cursor string) ([]string, string, error) {
		req.PageToken = cursor
		page, err := s.ListWorkflows(ctx, req)
		if err != nil {
			return nil, "", err
		}
		ids := make([]string, len(page.Records))
		for i, r := range page.Records {
			ids[i] = r.WorkflowID
		}
		return ids, page.NextPageToken, nil
	})
}

// wfListWorkflowsCases cover ListWorkflows (wf_list_workflows.go), the listing of the
// visibility rows RecordVisibility writes: filters, order and pages.
var wfListWorkflowsCases = []conformanceCase{
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
			if got := listAll(t, ctx, s, c.req); !slices.Equal(got, c.want) {
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

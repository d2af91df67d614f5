package rqueuetest

import (
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfListCases cover the listings over workflow rows: ListWorkflowIDs, StreamHeads,
// ListActive, ListPaused, Query.
var wfListCases = []conformanceCase{
	// seed: list_active_returns_only_running_workflows
	{"WfList/ActiveOnlyRunning", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "checkout"), wfCompleted(2))
		if got := listActive(t, ctx, s); !slices.Equal(got, []string{"wf-1"}) {
			t.Errorf("active is %q, want [wf-1]", got)
		}
	}},
	// seed: list_paused_and_list_active_partition_by_projected_status
	{"WfList/PausedAndActivePartition", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "checkout"), wfPaused(2))
		if got := listActive(t, ctx, s); !slices.Equal(got, []string{"wf-1"}) {
			t.Errorf("active is %q, want [wf-1]: a paused run is not active", got)
		}
		if got := listPaused(t, ctx, s); !slices.Equal(got, []string{"wf-2"}) {
			t.Errorf("paused is %q, want [wf-2]", got)
		}
	}},
	// seed: in_memory_store_satisfies_the_in_flight_listing_suite (the row-first verdict:
	// membership follows the row at every head, through pause, resume, close and a new run)
	{"WfList/InFlightListing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		check := func(step string, active, paused []string) {
			t.Helper()
			if got := listActive(t, ctx, s); !slices.Equal(got, active) {
				t.Errorf("%s: active is %q, want %q", step, got, active)
			}
			if got := listPaused(t, ctx, s); !slices.Equal(got, paused) {
				t.Errorf("%s: paused is %q, want %q", step, got, paused)
			}
		}
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "a"))
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "a"))
		check("started", []string{"wf-1", "wf-2"}, nil)
		mustAppend(t, ctx, s, "wf-1", 1, wfPaused(2))
		check("wf-1 paused", []string{"wf-2"}, []string{"wf-1"})
		mustAppend(t, ctx, s, "wf-1", 2, wfEvent(3, headgate.EventWorkflowResumed))
		check("wf-1 resumed", []string{"wf-1", "wf-2"}, nil)
		mustAppend(t, ctx, s, "wf-2", 1, wfEvent(2, headgate.EventStepCompleted))
		check("wf-2 stepped", []string{"wf-1", "wf-2"}, nil)
		mustAppend(t, ctx, s, "wf-2", 2, wfEvent(3, headgate.EventWorkflowContinuedAsNew))
		check("wf-2 continued as new", []string{"wf-1"}, nil)
		next := wfStarted(4, "a")
		next.RunID = "run-2"
		mustAppend(t, ctx, s, "wf-2", 3, next)
		check("wf-2 next run", []string{"wf-1", "wf-2"}, nil)
		mustAppend(t, ctx, s, "wf-1", 3, wfEvent(4, headgate.EventWorkflowTerminated))
		mustAppend(t, ctx, s, "wf-2", 4, wfEvent(5, headgate.EventWorkflowCancelled))
		check("both closed", nil, nil)
		// A history with no workflow_* event has no status: in no membership list.
		mustAppend(t, ctx, s, "wf-3", 0, wfEvent(1, headgate.EventSignalReceived))
		check("signal only", nil, nil)
	}},
	// seed: list_workflow_ids_returns_running_and_terminal_histories
	{"WfList/WorkflowIDsRunningAndTerminal", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"), wfCompleted(2))
		got := allPages(t, "list workflow ids", func(c string) ([]string, string, error) { return s.ListWorkflowIDs(ctx, c, 1) })
		if !slices.Equal(got, []string{"wf-1", "wf-2"}) {
			t.Errorf("workflow ids are %q, want [wf-1 wf-2]", got)
		}
	}},
	{"WfList/StreamHeads", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"), wfCompleted(2))
		got := allPages(t, "stream heads", func(c string) ([]headgate.StreamHead, string, error) { return s.StreamHeads(ctx, c, 1) })
		want := []headgate.StreamHead{{WorkflowID: "wf-1", Head: 2}, {WorkflowID: "wf-2", Head: 1}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("heads are %+v, want %+v", got, want)
		}
	}},
	// seed: query_uses_core_filter_semantics
	{"WfList/QueryFilter", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-2", 0, wfStarted(1, "checkout"), wfCompleted(2))
		mustAppend(t, ctx, s, "wf-3", 0, wfStarted(1, "billing"), wfFailed(2))
		got := query(t, ctx, s, headgate.WorkflowFilter{WorkflowType: "checkout", Status: headgate.WorkflowCompleted,
			StartedAfter: at(1), StartedBefore: at(1)}, 10)
		if len(got) != 1 || got[0].WorkflowID != "wf-2" || got[0].Status != headgate.WorkflowCompleted {
			t.Errorf("query is %+v, want wf-2 completed", got)
		}
		for name, c := range map[string]struct {
			f    headgate.WorkflowFilter
			want []string
		}{
			"all":             {headgate.WorkflowFilter{}, []string{"wf-1", "wf-2", "wf-3"}},
			"type":            {headgate.WorkflowFilter{WorkflowType: "checkout"}, []string{"wf-1", "wf-2"}},
			"status":          {headgate.WorkflowFilter{Status: headgate.WorkflowFailed}, []string{"wf-3"}},
			"started after":   {headgate.WorkflowFilter{StartedAfter: at(2)}, nil},
			"started before":  {headgate.WorkflowFilter{StartedBefore: at(0)}, nil},
			"unknown parent":  {headgate.WorkflowFilter{Parent: "nobody"}, nil},
			"type and status": {headgate.WorkflowFilter{WorkflowType: "billing", Status: headgate.WorkflowRunning}, nil},
		} {
			var ids []string
			for _, w := range query(t, ctx, s, c.f, 2) {
				ids = append(ids, w.WorkflowID)
			}
			if !slices.Equal(ids, c.want) {
				t.Errorf("query %s: %q, want %q", name, ids, c.want)
			}
		}
	}},
	{"WfList/QueryOrderAndParent", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		// Started at 3, 1, 2 seconds: order by start time, then id.
		for i, sec := range []int{3, 1, 2, 1} {
			e := wfStarted(1, "t")
			e.RecordedAt = at(sec)
			if i%2 == 0 {
				e.ParentWorkflowID = "parent"
			}
			mustAppend(t, ctx, s, wfID(i), 0, e)
		}
		var ids []string
		for _, w := range query(t, ctx, s, headgate.WorkflowFilter{}, 1) {
			ids = append(ids, w.WorkflowID)
		}
		if want := []string{wfID(1), wfID(3), wfID(2), wfID(0)}; !slices.Equal(ids, want) {
			t.Errorf("query order %q, want %q", ids, want)
		}
		ids = nil
		for _, w := range query(t, ctx, s, headgate.WorkflowFilter{Parent: "parent", Status: headgate.WorkflowRunning}, 1) {
			ids = append(ids, w.WorkflowID)
		}
		if want := []string{wfID(2), wfID(0)}; !slices.Equal(ids, want) {
			t.Errorf("children of parent %q, want %q", ids, want)
		}
		// A history without a started event is in no query (the seed's from_history).
		mustAppend(t, ctx, s, "orphan", 0, wfCompleted(1))
		if got := query(t, ctx, s, headgate.WorkflowFilter{}, 100); len(got) != 4 {
			t.Errorf("query has %d workflows, want 4 (not the orphan)", len(got))
		}
	}},
	{"WfList/QueryEqualSortKeysPaged", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const n = 101
		for i := range n {
			e := wfStarted(1, "same") // all start at the same instant
			mustAppend(t, ctx, s, wfID(i), 0, e)
		}
		for _, size := range []int{1, 7, 100} {
			got := query(t, ctx, s, headgate.WorkflowFilter{WorkflowType: "same"}, size)
			if len(got) != n {
				t.Errorf("page size %d: %d rows, want %d", size, len(got), n)
				continue
			}
			for i, w := range got {
				if w.WorkflowID != wfID(i) {
					t.Errorf("page size %d: row %d is %s, want %s (skipped or repeated)", size, i, w.WorkflowID, wfID(i))
					break
				}
			}
		}
		if _, _, err := s.Query(ctx, headgate.WorkflowFilter{}, "not base64!", 10); err == nil {
			t.Errorf("a malformed cursor was accepted")
		}
	}},
}

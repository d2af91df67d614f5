package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// wfHistoryCases cover the history reads: ReadHistory, ReadHistoryFrom, ReadRunChain.
var wfHistoryCases = []conformanceCase{
	// seed: read_history_returns_empty_for_unknown_workflow
	{"WfHistory/EmptyForUnknown", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if h := mustHistory(t, ctx, s, "wf-1"); len(h) != 0 {
			t.Errorf("unknown workflow has history %+v", h)
		}
		page, next, err := s.ReadHistoryFrom(ctx, "wf-1", 1, 10)
		if err != nil || len(page) != 0 || next != 0 {
			t.Errorf("read from 1 of an unknown workflow: %+v %d %v", page, next, err)
		}
	}},
	{"WfHistory/ReadFromPages", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		events := []headgate.Event{wfStarted(1, "checkout")}
		for seq := int64(2); seq <= 25; seq++ {
			events = append(events, wfEvent(seq, headgate.EventStepCompleted))
		}
		mustAppend(t, ctx, s, "wf-1", 0, events...)
		var got []headgate.Event
		for from := int64(1); from != 0; {
			page, next, err := s.ReadHistoryFrom(ctx, "wf-1", from, 7)
			if err != nil {
				t.Fatalf("read from %d: %v", from, err)
			}
			if len(page) > 7 || len(page) > 0 && page[0].Seq != from {
				t.Fatalf("read from %d: page %+v", from, page)
			}
			got = append(got, page...)
			from = next
		}
		if !sameEvents(got, events) {
			t.Errorf("paged history differs from what was appended")
		}
		tail, next, err := s.ReadHistoryFrom(ctx, "wf-1", 24, 100)
		if err != nil || next != 0 || len(tail) != 2 || tail[0].Seq != 24 || tail[1].Seq != 25 {
			t.Errorf("read from 24: %+v %d %v", tail, next, err)
		}
		past, next, err := s.ReadHistoryFrom(ctx, "wf-1", 26, 100)
		if err != nil || next != 0 || len(past) != 0 {
			t.Errorf("read past the head: %+v %d %v", past, next, err)
		}
		if _, _, err := s.ReadHistoryFrom(ctx, "wf-1", 1, 1001); err == nil {
			t.Errorf("a page of 1001 was accepted")
		}
	}},
	// seed: read_run_chain_projects_run_id_from_started_event
	{"WfHistory/RunChainFromStarted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"), wfCompleted(2))
		chain, err := s.ReadRunChain(ctx, "wf-1")
		if err != nil {
			t.Fatalf("read run chain: %v", err)
		}
		if len(chain) != 1 || chain[0].RunID != "run-1" || chain[0].Status != headgate.WorkflowCompleted ||
			!chain[0].ClosedAt.Equal(at(2)) || !chain[0].StartedAt.Equal(at(1)) {
			t.Errorf("run chain is %+v, want run-1 completed at %v", chain, at(2))
		}
		if chain, err := s.ReadRunChain(ctx, "unknown"); err != nil || len(chain) != 0 {
			t.Errorf("run chain of an unknown workflow: %+v %v", chain, err)
		}
	}},
	{"WfHistory/RunChainContinueAsNew", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const runs = 30
		var seq int64
		for r := range runs {
			st := wfStarted(seq+1, "loop")
			st.RunID = wfID(r)
			next := wfEvent(seq+2, headgate.EventWorkflowContinuedAsNew)
			if r == runs-1 {
				next = wfPaused(seq + 2)
			}
			mustAppend(t, ctx, s, "wf-1", seq, st, next)
			seq += 2
		}
		chain, err := s.ReadRunChain(ctx, "wf-1")
		if err != nil {
			t.Fatalf("read run chain: %v", err)
		}
		if len(chain) != runs {
			t.Fatalf("run chain has %d runs, want %d", len(chain), runs)
		}
		for r, rs := range chain {
			want := headgate.WorkflowContinuedAsNew
			if r == runs-1 {
				want = headgate.WorkflowPaused
			}
			if rs.RunID != wfID(r) || rs.Status != want || !rs.StartedAt.Equal(at(2*r+1)) {
				t.Errorf("run %d is %+v, want %s %s started %v", r, rs, wfID(r), want, at(2*r+1))
			}
			if closed := r < runs-1; closed != !rs.ClosedAt.IsZero() || closed && !rs.ClosedAt.Equal(at(2*r+2)) {
				t.Errorf("run %d closed at %v", r, rs.ClosedAt)
			}
		}
		w, err := s.GetWorkflow(ctx, "wf-1")
		if err != nil || w.RunID != wfID(runs-1) || w.Status != headgate.WorkflowPaused || !w.StartedAt.Equal(at(1)) {
			t.Errorf("row of the chain is %+v (%v), want the last run, paused, started with the first", w, err)
		}
	}},
}

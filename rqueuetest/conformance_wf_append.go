package rqueuetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfAppendCases cover Append: optimistic concurrency, contiguity, the workflow's row.
var wfAppendCases = []conformanceCase{
	// seed: append_preserves_sequence_order
	{"WfAppend/PreservesSequenceOrder", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		first, second := wfStarted(1, "checkout"), wfCompleted(2)
		mustAppend(t, ctx, s, "wf-1", 0, first)
		mustAppend(t, ctx, s, "wf-1", 1, second)
		if got := mustHistory(t, ctx, s, "wf-1"); !sameEvents(got, []headgate.Event{first, second}) {
			t.Errorf("history is %+v, want started then completed", got)
		}
	}},
	// seed: stale_expected_sequence_writes_nothing
	{"WfAppend/StaleExpectedSeqWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		first := wfStarted(1, "checkout")
		mustAppend(t, ctx, s, "wf-1", 0, first)
		err := unchanged(t, ctx, s, "stale append", func() error {
			return s.Append(ctx, "wf-1", []headgate.Event{wfCompleted(1)}, 0)
		})
		c := wantErr[*headgate.SequenceConflictError](t, err)
		if c != nil && (c.Expected != 0 || c.Found != 1 || c.WorkflowID != "wf-1") {
			t.Errorf("conflict is %+v, want expected 0 found 1 of wf-1", c)
		}
		if got := mustHistory(t, ctx, s, "wf-1"); !sameEvents(got, []headgate.Event{first}) {
			t.Errorf("history is %+v, want only the first event", got)
		}
		// Ahead of the head is a conflict too.
		err = unchanged(t, ctx, s, "append ahead", func() error {
			return s.Append(ctx, "wf-1", []headgate.Event{wfCompleted(6)}, 5)
		})
		wantErr[*headgate.SequenceConflictError](t, err)
	}},
	// seed: append_rejects_non_contiguous_event_sequences
	{"WfAppend/NonContiguousWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		err := unchanged(t, ctx, s, "gap on a new history", func() error {
			return s.Append(ctx, "wf-1", []headgate.Event{wfStarted(1, "checkout"), wfCompleted(5)}, 0)
		})
		g := wantErr[*headgate.SequenceGapError](t, err)
		if g != nil && (g.Index != 1 || g.Want != 2 || g.Got != 5) {
			t.Errorf("gap is %+v, want events[1] seq 5 for 2", g)
		}
		if got := mustHistory(t, ctx, s, "wf-1"); len(got) != 0 {
			t.Errorf("history is %+v, want empty", got)
		}
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"))
		for name, events := range map[string][]headgate.Event{
			"repeats the head":   {wfCompleted(1)},
			"skips one":          {wfCompleted(3)},
			"goes back":          {wfEvent(2, headgate.EventMarkerRecorded), wfEvent(2, headgate.EventMarkerRecorded)},
			"gap after the head": {wfEvent(2, headgate.EventMarkerRecorded), wfEvent(4, headgate.EventMarkerRecorded)},
		} {
			err := unchanged(t, ctx, s, name, func() error { return s.Append(ctx, "wf-1", events, 1) })
			wantErr[*headgate.SequenceGapError](t, err)
		}
	}},
	{"WfAppend/EmptyAppendChecksHead", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		err := unchanged(t, ctx, s, "empty append on a new history", func() error {
			if err := s.Append(ctx, "wf-1", nil, 0); err != nil {
				return err
			}
			return errors.New("ok") // unchanged wants an error: the empty append must write nothing
		})
		if err == nil || err.Error() != "ok" {
			t.Errorf("empty append at head 0: %v", err)
		}
		if _, err := s.GetWorkflow(ctx, "wf-1"); !errors.Is(err, headgate.ErrWorkflowNotFound) {
			t.Errorf("an empty append created the workflow: %v", err)
		}
		mustAppend(t, ctx, s, "wf-1", 0, wfStarted(1, "checkout"))
		mustAppend(t, ctx, s, "wf-1", 1)
		err = unchanged(t, ctx, s, "empty append at a stale head", func() error { return s.Append(ctx, "wf-1", nil, 0) })
		wantErr[*headgate.SequenceConflictError](t, err)
	}},
	{"WfAppend/InvalidWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		noType := wfStarted(1, "")
		noTimer := wfEvent(1, headgate.EventTimerStarted)
		for name, f := range map[string]func() error{
			"empty id":         func() error { return s.Append(ctx, "", []headgate.Event{wfStarted(1, "t")}, 0) },
			"brace in id":      func() error { return s.Append(ctx, "a{b}", []headgate.Event{wfStarted(1, "t")}, 0) },
			"unknown kind":     func() error { return s.Append(ctx, "wf", []headgate.Event{wfEvent(1, "nope")}, 0) },
			"started w/o type": func() error { return s.Append(ctx, "wf", []headgate.Event{noType}, 0) },
			"timer w/o id":     func() error { return s.Append(ctx, "wf", []headgate.Event{noTimer}, 0) },
			"negative seq":     func() error { return s.Append(ctx, "wf", nil, -1) },
		} {
			err := unchanged(t, ctx, s, name, f)
			wantErr[*headgate.InvalidError](t, err)
		}
	}},
	// seed: concurrent_appends_on_same_expected_sequence_conflict_once (2 writers there, 8 here)
	{"WfAppend/ConcurrentSameSeqOneWins", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const writers = 8
		for round := int64(0); round < 3; round++ {
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := wfEvent(round+1, headgate.EventMarkerRecorded)
					e.Name = fmt.Sprintf("writer-%d", w)
					errs[w] = s.Append(ctx, "wf-1", []headgate.Event{e}, round)
				}()
			}
			wg.Wait()
			wins, conflicts := 0, 0
			for _, err := range errs {
				var c *headgate.SequenceConflictError
				switch {
				case err == nil:
					wins++
				case errors.As(err, &c) && c.Expected == round && c.Found == round+1:
					conflicts++
				default:
					t.Errorf("round %d: unexpected error %v", round, err)
				}
			}
			if wins != 1 || conflicts != writers-1 {
				t.Errorf("round %d: %d appends won and %d conflicted, want 1 and %d", round, wins, conflicts, writers-1)
			}
		}
		if h := mustHistory(t, ctx, s, "wf-1"); len(h) != 3 {
			t.Errorf("history has %d events, want 3 (one per round)", len(h))
		}
	}},
	{"WfAppend/RowKeepsHeadAndStatus", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		started := wfStarted(1, "checkout")
		started.ParentWorkflowID, started.ParentRunID = "parent-1", "parent-run"
		mustAppend(t, ctx, s, "wf-1", 0, started, wfEvent(2, headgate.EventStepCompleted))
		w, err := s.GetWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatalf("get workflow: %v", err)
		}
		if w.Head != 2 || w.Status != headgate.WorkflowRunning || w.WorkflowType != "checkout" || w.RunID != "run-1" ||
			w.ParentWorkflowID != "parent-1" || w.ParentRunID != "parent-run" || w.PackageVersion != "pkg-a" ||
			!w.StartedAt.Equal(at(1)) || !w.ClosedAt.IsZero() || !w.UpdatedAt.Equal(epoch) {
			t.Errorf("row is %+v", w)
		}
		mustAppend(t, ctx, s, "wf-1", 2, wfFailed(3))
		w, err = s.GetWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatalf("get workflow: %v", err)
		}
		if w.Head != 3 || w.Status != headgate.WorkflowFailed || !w.ClosedAt.Equal(at(3)) {
			t.Errorf("row after failure is %+v", w)
		}
		if got, want := w.Status, headgate.StatusFromEvents(mustHistory(t, ctx, s, "wf-1")); got != want {
			t.Errorf("row status %s, history folds to %s", got, want)
		}
		// Events without a recorded time take the store clock's.
		e := wfEvent(4, headgate.EventMarkerRecorded)
		e.RecordedAt = time.Time{}
		mustAppend(t, ctx, s, "wf-1", 3, e)
		if h := mustHistory(t, ctx, s, "wf-1"); !h[3].RecordedAt.Equal(epoch) {
			t.Errorf("an unstamped event was recorded at %v, want the store time %v", h[3].RecordedAt, epoch)
		}
	}},
}

package rqueuetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/headgate/headgate"
)

// wfSignalCases cover SignalWorkflow and CancelWorkflow (lua/wf_signal.lua): a signal is
// appended to an open run's history, or kept in its inbox while a task runs; a cancel
// request likewise, once per run.
var wfSignalCases = []conformanceCase{
	{"WfSignal/AppendedOrInbox", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if err := s.SignalWorkflow(ctx, "nobody", "go", nil); !errors.Is(err, headgate.ErrWorkflowNotFound) {
			t.Errorf("signal to no workflow: %v", err)
		}
		task := startRun(t, ctx, s, "w")
		// While the task runs, the signal waits in the inbox: the history is the task's.
		if err := s.SignalWorkflow(ctx, "w", "go", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		if h := mustHistory(t, ctx, s, "w"); len(h) != 1 {
			t.Fatalf("the signal reached the history while the task ran: %+v", h)
		}
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventTimerStarted, Name: "s#1", TimerID: "sleep/s#1"}}})
		h := mustHistory(t, ctx, s, "w")
		if res.Head != 3 || len(h) != 3 || h[2].Kind != headgate.EventSignalReceived || h[2].Name != "go" {
			t.Fatalf("after the commit: head %d, history %+v; want the signal after the task's event", res.Head, h)
		}
		if res.NextTaskID == "" {
			t.Fatal("no next task for the signal the task did not see")
		}
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateDeleted)
		// With no task running the signal is appended at once; the task is not doubled.
		if err := s.SignalWorkflow(ctx, "w", "go", []byte(`2`)); err != nil {
			t.Fatal(err)
		}
		if h := mustHistory(t, ctx, s, "w"); len(h) != 4 {
			t.Errorf("history %d events, want the second signal appended", len(h))
		}
		next := admitOne(t, ctx, s, "wf")
		if next.Envelope.ID != res.NextTaskID {
			t.Errorf("admitted %s, want the one next task %s", next.Envelope.ID, res.NextTaskID)
		}
		if more := mustAdmit(t, ctx, s, admitReq("w2", 10, "wf")); len(more) != 0 {
			t.Errorf("a second task was enqueued: %v", ids(more))
		}
	}},
	{"WfSignal/RefusesANameNoAwaitTakes", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		for _, name := range []string{"", "order/shipped", "shipped#1", "fan[0]", strings.Repeat("s", 201)} {
			err := s.SignalWorkflow(ctx, "w", name, []byte(`1`))
			if inv, ok := errors.AsType[*headgate.InvalidError](err); !ok || inv.Field != "name" {
				t.Errorf("signal %.20q: %v, want an *InvalidError naming the name", name, err)
			}
		}
		if err := s.SignalWorkflow(ctx, "w", strings.Repeat("s", 200), []byte(`1`)); err != nil {
			t.Errorf("a 200-byte name: %v", err)
		}
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true})
		if h := mustHistory(t, ctx, s, "w"); res.Head != 2 || len(h) != 2 || h[1].Name != strings.Repeat("s", 200) {
			t.Errorf("history %+v: want only the signal of the 200-byte name", h)
		}
	}},
	{"WfSignal/CancelOncePerRun", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		cancel := func(id string, want bool) {
			t.Helper()
			requested, err := s.CancelWorkflow(ctx, id, "no longer needed", "op")
			if err != nil || requested != want {
				t.Fatalf("cancel %s: %t, %v; want %t", id, requested, err, want)
			}
		}
		// A repeat while the request waits in the inbox (the task runs) writes nothing.
		task := startRun(t, ctx, s, "w")
		cancel("w", true)
		writesNothing(t, ctx, s, "a second cancel, the first in the inbox", func() { cancel("w", false) })
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventTimerStarted, Name: "s#1", TimerID: "sleep/s#1"}}})
		if h := mustHistory(t, ctx, s, "w"); len(h) != 3 || h[2].Kind != headgate.EventWorkflowCancelRequested {
			t.Fatalf("history %+v, want the one cancel request after the task's event", h)
		}
		// And while it is in the history, the run open.
		writesNothing(t, ctx, s, "a cancel of a run cancel was requested of", func() { cancel("w", false) })

		// A new run (continue-as-new) may be cancelled.
		next := admitOne(t, ctx, s, "wf")
		if next.Envelope.ID != res.NextTaskID {
			t.Fatalf("admitted %s, want the task %s", next.Envelope.ID, res.NextTaskID)
		}
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: next.LeaseRef(), ExpectedHead: 3, End: true,
			NextTask: true, Events: []headgate.Event{
				{Seq: 4, Kind: headgate.EventWorkflowContinuedAsNew, RunID: "r2"},
				{Seq: 5, Kind: headgate.EventWorkflowStarted, WorkflowType: "t", RunID: "r2"}}})
		cancel("w", true)
		cancel("w", false)
		if h := mustHistory(t, ctx, s, "w"); len(h) != 6 || h[5].Kind != headgate.EventWorkflowCancelRequested {
			t.Fatalf("history %+v, want the new run's one cancel request", h)
		}

		// A run retried after a cancel reached it as it failed may be cancelled again: the
		// retry removed the request.
		task = startRun(t, ctx, s, "f")
		cancel("f", true)
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "f", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowFailed, Error: &headgate.WorkflowError{Message: "x"}}}})
		if _, err := s.RetryWorkflow(ctx, "f"); err != nil {
			t.Fatal(err)
		}
		if h := mustHistory(t, ctx, s, "f"); len(h) != 1 {
			t.Fatalf("history after the retry %+v, want the start alone", h)
		}
		cancel("f", true)
		cancel("f", false)
		checkCounts(t, s)
	}},
}

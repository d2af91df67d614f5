package rqueuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// startRun starts a run of type t on queue q and admits its first task.
func startRun(t testing.TB, ctx context.Context, s *headgate.Store, id string) headgate.Claim {
	t.Helper()
	r, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: id, WorkflowType: "t", RunID: "r1", Queue: "wf"})
	if err != nil || !r.Started {
		t.Fatalf("start %s: %+v, %v", id, r, err)
	}
	return admitOne(t, ctx, s, "wf")
}

func mustCommit(t testing.TB, ctx context.Context, s *headgate.Store, c headgate.TaskCommit) *headgate.TaskCommitted {
	t.Helper()
	r, err := s.CommitWorkflowTask(ctx, c)
	if err != nil {
		t.Fatalf("commit %s: %v", c.WorkflowID, err)
	}
	return r
}

// wfStartCases cover StartWorkflow and SignalWorkflow.
var wfStartCases = []conformanceCase{
	{"WfStart/FirstTaskAndIdempotence", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		r, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-1", WorkflowType: "checkout", RunID: "r1",
			Queue: "wf", Partition: "tenant-1", Input: []byte(`{"n":1}`)})
		if err != nil || !r.Started || r.TaskID == "" {
			t.Fatalf("start: %+v, %v", r, err)
		}
		task := getJob(t, ctx, s, r.TaskID)
		if task.Kind != "workflow:checkout" || task.Queue != "wf" || task.PartitionKey != "tenant-1" ||
			task.State != headgate.StateAvailable || string(task.Payload) != "o-1" {
			t.Errorf("first task %+v", task.Envelope)
		}
		again, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-1", WorkflowType: "checkout", RunID: "r2", Queue: "wf"})
		if err != nil || again.Started || again.RunID != "r1" || again.Status != headgate.WorkflowRunning {
			t.Errorf("second start: %+v, %v; want the existing run r1", again, err)
		}
		if h := mustHistory(t, ctx, s, "o-1"); len(h) != 1 || h[0].Kind != headgate.EventWorkflowStarted {
			t.Errorf("history after two starts: %+v", h)
		}
		if v, err := s.GetVisibility(ctx, "o-1"); err != nil || v.Status != headgate.WorkflowRunning {
			t.Errorf("visibility %+v, %v", v, err)
		}
	}},
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
}

// readmitAfterLeaseLoss lets the lease of held expire, reclaims the job and admits it
// again from queue, under a new fence.
func readmitAfterLeaseLoss(t testing.TB, ctx context.Context, s *headgate.Store, held headgate.LeaseRef, queue string) headgate.Claim {
	t.Helper()
	advance(t, ctx, s, time.Hour)
	if _, err := s.ReclaimExpired(ctx, 10); err != nil {
		t.Fatal(err)
	}
	advance(t, ctx, s, time.Hour)
	mustPromote(t, ctx, s)
	fresh := admitOne(t, ctx, s, queue)
	if fresh.Envelope.ID != held.JobID || fresh.Fence == held.Fence {
		t.Fatalf("readmitted %s fence %d, the lost lease's job %s fence %d", fresh.Envelope.ID, fresh.Fence, held.JobID, held.Fence)
	}
	return fresh
}

// wfCommitTaskCases cover CommitWorkflowTask and FireTimers.
var wfCommitTaskCases = []conformanceCase{
	{"WfCommit/StaleWorkerRefused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		stale := task.LeaseRef()
		fresh := readmitAfterLeaseLoss(t, ctx, s, stale, "wf")
		c := headgate.TaskCommit{WorkflowID: "w", Lease: stale, ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowCompleted}}}
		err := unchanged(t, ctx, s, "stale commit", func() error {
			_, err := s.CommitWorkflowTask(ctx, c)
			return err
		})
		var rejected *headgate.LeaseRejectedError
		if !errors.As(err, &rejected) || rejected.JobID != stale.JobID {
			t.Errorf("stale commit: %v, want *LeaseRejectedError for %s", err, stale.JobID)
		}
		// The holder's commit at a head it did not read is refused too.
		c.Lease = fresh.LeaseRef()
		c.ExpectedHead, c.Events = 0, nil
		err = unchanged(t, ctx, s, "commit at a wrong head", func() error {
			_, err := s.CommitWorkflowTask(ctx, c)
			return err
		})
		var conflict *headgate.SequenceConflictError
		if !errors.As(err, &conflict) || conflict.Found != 1 {
			t.Errorf("commit at head 0: %v, want *SequenceConflictError found 1", err)
		}
		c.ExpectedHead, c.Events = 1, []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowCompleted}}
		mustCommit(t, ctx, s, c)
		if w, err := s.GetWorkflow(ctx, "w"); err != nil || w.Status != headgate.WorkflowCompleted {
			t.Errorf("after the holder's commit: %+v, %v", w, err)
		}
	}},
	{"WfCommit/CheckpointKeepsTheTask", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventStepCompleted, Name: "a#1"}}})
		if res.Head != 2 || res.NextTaskID != "" {
			t.Errorf("checkpoint: %+v", res)
		}
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateRunning)
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 2, End: true,
			Events: []headgate.Event{{Seq: 3, Kind: headgate.EventWorkflowCompleted, Result: []byte(`"ok"`)}}})
		wantState(t, ctx, s, task.Envelope.ID, headgate.StateDeleted)
	}},
	{"WfCommit/ChildAndParent", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "p")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events:   []headgate.Event{{Seq: 2, Kind: headgate.EventChildStarted, Name: "c#1", ChildWorkflowID: "p/c#1"}},
			Children: []headgate.WorkflowStart{{WorkflowID: "p/c#1", WorkflowType: "t", RunID: "cr", Queue: "wf"}}})
		child := admitOne(t, ctx, s, "wf")
		if string(child.Envelope.Payload) != "p/c#1" {
			t.Fatalf("admitted %q, want the child's task", child.Envelope.Payload)
		}
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p/c#1", Lease: child.LeaseRef(), ExpectedHead: 1, End: true,
			Events:      []headgate.Event{{Seq: 2, Kind: headgate.EventWorkflowFailed, Error: &headgate.WorkflowError{Message: "boom"}}},
			ParentEvent: &headgate.Event{Kind: headgate.EventChildFailed, ChildWorkflowID: "p/c#1", Error: &headgate.WorkflowError{Message: "boom"}}})
		h := mustHistory(t, ctx, s, "p")
		if len(h) != 3 || h[2].Kind != headgate.EventChildFailed || h[2].Error == nil || h[2].Error.Message != "boom" {
			t.Fatalf("parent history %+v, want child_failed", h)
		}
		if next := admitOne(t, ctx, s, "wf"); string(next.Envelope.Payload) != "p" {
			t.Errorf("admitted %q, want the parent's next task", next.Envelope.Payload)
		}
	}},
	{"WfFireTimers/OnTheStoreClock", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		task := startRun(t, ctx, s, "w")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events:    []headgate.Event{{Seq: 2, Kind: headgate.EventTimerStarted, Name: "s#1", TimerID: "sleep/s#1"}},
			ArmTimers: []headgate.TimerArm{{TimerID: "sleep/s#1", FireAt: epoch.Add(30 * 24 * time.Hour), ArmedSeq: 2}}})
		advance(t, ctx, s, 30*24*time.Hour-time.Millisecond)
		n, next, err := s.FireTimers(ctx, 10)
		if err != nil || n != 0 || !next.Equal(epoch.Add(30*24*time.Hour)) {
			t.Fatalf("fire 1ms early: %d fired, next %s, %v", n, next, err)
		}
		advance(t, ctx, s, time.Millisecond)
		if n, next, err = s.FireTimers(ctx, 10); err != nil || n != 1 || !next.IsZero() {
			t.Fatalf("fire when due: %d fired, next %s, %v", n, next, err)
		}
		h := mustHistory(t, ctx, s, "w")
		if len(h) != 3 || h[2].Kind != headgate.EventTimerFired || h[2].TimerID != "sleep/s#1" {
			t.Fatalf("history %+v, want timer_fired", h)
		}
		if next := admitOne(t, ctx, s, "wf"); string(next.Envelope.Payload) != "w" {
			t.Errorf("admitted %q, want the woken workflow's task", next.Envelope.Payload)
		}
	}},
}

package rqueuetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headgate/headgate"
)

// wantRunVersion checks that workflow id's row, its current run's workflow_started and
// its visibility row are all on version.
func wantRunVersion(t testing.TB, ctx context.Context, s *headgate.Store, id, version string) {
	t.Helper()
	row, err := s.GetWorkflow(ctx, id)
	if err != nil || row.PackageVersion != version {
		t.Fatalf("workflow %s: %+v, %v; want version %q", id, row, err, version)
	}
	h := mustHistory(t, ctx, s, id)
	if e := h[row.RunStartSeq-1]; e.Kind != headgate.EventWorkflowStarted || e.PackageVersion != version {
		t.Errorf("workflow %s: run started with %+v, want version %q", id, e, version)
	}
	if v, err := s.GetVisibility(ctx, id); err != nil || v.PackageVersion != version {
		t.Errorf("workflow %s: visibility %+v, %v; want version %q", id, v, err, version)
	}
}

// wfVersionCases cover how StartWorkflow and CommitWorkflowTask pin runs to package
// versions, and how the worker deployments' desired states drain a version.
var wfVersionCases = []conformanceCase{
	{"WfVersion/StartPinsToTheRouteOrTheGivenVersion", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const hash = "sha256:a%c"
		if err := s.PutPackageRoute(ctx, "checkout", hash); err != nil {
			t.Fatal(err)
		}
		routed, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-1", WorkflowType: "checkout", Queue: "wf",
			Input: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		wantRunVersion(t, ctx, s, "o-1", hash)
		if h := mustHistory(t, ctx, s, "o-1"); string(h[0].Input) != `{"n":1}` || h[0].WorkflowType != "checkout" {
			t.Errorf("routed start's event %+v: the version was added, the rest kept", h[0])
		}
		// The task queue's escaping is the same in Go and Lua, and escapes what a queue
		// name cannot hold.
		if q := getJob(t, ctx, s, routed.TaskID).Queue; q != headgate.VersionedQueue("wf", hash) || q != "wf@sha256%3Aa%25c" {
			t.Errorf("routed task on queue %q, want %q", q, headgate.VersionedQueue("wf", hash))
		}
		named, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-2", WorkflowType: "checkout", Queue: "wf",
			PackageVersion: "v9"})
		if err != nil {
			t.Fatal(err)
		}
		wantRunVersion(t, ctx, s, "o-2", "v9")
		if q := getJob(t, ctx, s, named.TaskID).Queue; q != "wf@v9" {
			t.Errorf("named version's task on queue %q, want wf@v9", q)
		}
		unrouted, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "o-3", WorkflowType: "refund", Queue: "wf"})
		if err != nil {
			t.Fatal(err)
		}
		wantRunVersion(t, ctx, s, "o-3", "")
		if q := getJob(t, ctx, s, unrouted.TaskID).Queue; q != "wf" {
			t.Errorf("unversioned task on queue %q, want wf", q)
		}
	}},
	{"WfVersion/ChildrenInheritAndContinueAsNewMoves", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "p", WorkflowType: "t", RunID: "r1", Queue: "wf",
			PackageVersion: "v1"}); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf@v1")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p", Lease: task.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventChildStarted, Name: "c#1", ChildWorkflowID: "p/c#1"}},
			Children: []headgate.WorkflowStart{{WorkflowID: "p/c#1", WorkflowType: "t", RunID: "cr", Queue: "wf",
				PackageVersion: "v1"}}})
		if child := admitOne(t, ctx, s, "wf@v1"); string(child.Envelope.Payload) != "p/c#1" {
			t.Fatalf("admitted %q from wf@v1, want the child's task", child.Envelope.Payload)
		}
		wantRunVersion(t, ctx, s, "p/c#1", "v1")

		if err := s.SignalWorkflow(ctx, "p", "go", nil); err != nil {
			t.Fatal(err)
		}
		task = admitOne(t, ctx, s, "wf@v1")
		next := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "p", Lease: task.LeaseRef(), ExpectedHead: 3, End: true,
			NextTask: true, Events: []headgate.Event{
				{Seq: 4, Kind: headgate.EventWorkflowContinuedAsNew, RunID: "r2"},
				{Seq: 5, Kind: headgate.EventWorkflowStarted, WorkflowType: "t", RunID: "r2", PackageVersion: "v2"}}})
		if q := getJob(t, ctx, s, next.NextTaskID).Queue; q != "wf@v2" {
			t.Fatalf("the new run's first task is on %q, want wf@v2", q)
		}
		wantRunVersion(t, ctx, s, "p", "v2")
	}},
	{"WfVersion/DrainingRefusesNewRuns", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		start := func(id, version string) error {
			_, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: id, WorkflowType: "t", Queue: "wf",
				PackageVersion: version})
			return err
		}
		refused := func(what, id string) {
			t.Helper()
			err := start(id, "v1")
			var draining *headgate.VersionDrainingError
			if !errors.As(err, &draining) || draining.Version != "v1" || draining.WorkflowID != id {
				t.Fatalf("%s: start on v1: %v, want VersionDrainingError", what, err)
			}
			if _, err := s.GetWorkflow(ctx, id); !errors.Is(err, headgate.ErrWorkflowNotFound) {
				t.Fatalf("%s: the refused start wrote %s: %v", what, id, err)
			}
		}
		started := func(what, id string) {
			t.Helper()
			if err := start(id, "v1"); err != nil {
				t.Fatalf("%s: start on v1: %v", what, err)
			}
		}
		put := func(name string, versions ...string) {
			t.Helper()
			if _, _, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: name, Versions: versions}); err != nil {
				t.Fatal(err)
			}
		}
		setState := func(name string, d headgate.DesiredState) {
			t.Helper()
			if _, err := s.SetDesiredState(ctx, name, d); err != nil {
				t.Fatal(err)
			}
		}
		started("no deployment lists v1", "a")
		put("blue", "v1", "v2")
		setState("blue", headgate.DesiredDraining)
		refused("blue draining", "b")
		if err := start("b", "v2"); !errors.As(err, new(*headgate.VersionDrainingError)) {
			t.Fatalf("start on v2 of draining blue: %v, want VersionDrainingError", err)
		}
		put("green", "v1")
		started("green active beside draining blue", "c")
		setState("green", headgate.DesiredDrained)
		refused("both not active", "d")
		// A poisoned row counts for nothing, so green's versions leave with its record;
		// a decodable raw row counts like a put.
		if err := s.WriteRawWorkerDeployment(ctx, "green", []byte("poison")); err != nil {
			t.Fatal(err)
		}
		refused("green poisoned, blue draining", "d")
		setState("blue", headgate.DesiredActive)
		started("blue active", "d")
		put("blue", "v2")
		started("blue's new spec drops v1: no deployment lists it", "e")
		setState("blue", headgate.DesiredDraining)
		put("red", "v1")
		setState("red", headgate.DesiredDraining)
		refused("red draining", "f")
		if _, _, err := s.DeleteWorkerDeployment(ctx, "red"); err != nil {
			t.Fatal(err)
		}
		started("red deleted", "f")
	}},
	{"WfVersion/TaskQueueTooLongRefused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		// A route's version meets the run's queue only in the start's script.
		version := strings.Repeat("v", headgate.MaxVersionBytes)
		if err := s.PutPackageRoute(ctx, "t", version); err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("q", headgate.MaxNameBytes-headgate.MaxVersionBytes) // one byte too many with "@"
		err := unchanged(t, ctx, s, "start on the route with a long queue", func() error {
			_, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", Queue: long})
			return err
		})
		if invalid, ok := errors.AsType[*headgate.InvalidError](err); !ok || invalid.Field != "PackageVersion" ||
			!strings.Contains(err.Error(), "longer than 256 bytes") {
			t.Errorf("start on the route with a long queue: %v, want an InvalidError of PackageVersion", err)
		}
		fits := long[1:]
		if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", RunID: "r1",
			Queue: fits}); err != nil {
			t.Fatalf("start on the route with the longest queue that fits: %v", err)
		}
		task := admitOne(t, ctx, s, headgate.VersionedQueue(fits, version))
		// A step job goes on the run's version of its queue, which is too long here.
		err = unchanged(t, ctx, s, "commit of a step job on a long queue", func() error {
			_, err := s.CommitWorkflowTask(ctx, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 1,
				End:      true,
				Events:   []headgate.Event{{Seq: 2, Kind: headgate.EventStepScheduled, Name: "a#1", Attempt: 1, Queue: long}},
				StepJobs: []headgate.StepJob{{Step: "a#1", Queue: long}}})
			return err
		})
		if invalid, ok := errors.AsType[*headgate.InvalidError](err); !ok || invalid.Field != "PackageVersion" {
			t.Errorf("commit of a step job on a long queue: %v, want an InvalidError of PackageVersion", err)
		}
		checkCounts(t, s)
	}},
	{"WfVersion/OpenRunsCounted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		want := func(what string, v1, v2 int64) {
			t.Helper()
			got, err := s.OpenRunsByVersion(ctx, "v1", "v2", "v3")
			if err != nil || got["v1"] != v1 || got["v2"] != v2 || got["v3"] != 0 {
				t.Errorf("%s: open runs %v, %v; want v1 %d, v2 %d, v3 0", what, got, err, v1, v2)
			}
			// A version with no open run keeps no count.
			fields, err := s.Client().HKeys(ctx, nsKey(s, "verruns")).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				if n, err := s.OpenRunsByVersion(ctx, f); err != nil || n[f] <= 0 {
					t.Errorf("%s: version %s keeps a count of %v, %v", what, f, n, err)
				}
			}
		}
		start := func(id, version string) headgate.Claim {
			t.Helper()
			if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: id, WorkflowType: "t", RunID: "r1",
				Queue: "wf", PackageVersion: version}); err != nil {
				t.Fatal(err)
			}
			return admitOne(t, ctx, s, headgate.VersionedQueue("wf", version))
		}
		want("none", 0, 0)
		a := start("a", "v1")
		b := start("b", "v1")
		c := start("c", "v2")
		start("d", "") // unversioned: counted nowhere
		if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "a", WorkflowType: "t", Queue: "wf",
			PackageVersion: "v1"}); err != nil { // the existing run: counted once
			t.Fatal(err)
		}
		want("three started", 2, 1)
		// a starts a child on v1 and completes; the child stays open.
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "a", Lease: a.LeaseRef(), ExpectedHead: 1, End: true,
			Events: []headgate.Event{{Seq: 2, Kind: headgate.EventChildStarted, Name: "k#1", ChildWorkflowID: "a/k"},
				{Seq: 3, Kind: headgate.EventWorkflowCompleted}},
			Children: []headgate.WorkflowStart{{WorkflowID: "a/k", WorkflowType: "t", RunID: "kr", Queue: "wf",
				PackageVersion: "v1"}}})
		want("a completed, its child open", 2, 1)
		if k := admitOne(t, ctx, s, "wf@v1"); string(k.Envelope.Payload) != "a/k" {
			t.Fatalf("admitted %q, want the child's task", k.Envelope.Payload)
		}
		// c continues as new on v1: v2 has no open run left.
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "c", Lease: c.LeaseRef(), ExpectedHead: 1, End: true,
			NextTask: true, Events: []headgate.Event{
				{Seq: 2, Kind: headgate.EventWorkflowContinuedAsNew, RunID: "r2"},
				{Seq: 3, Kind: headgate.EventWorkflowStarted, WorkflowType: "t", RunID: "r2", PackageVersion: "v1"}}})
		want("c moved to v1", 3, 0)
		if _, err := s.PauseWorkflow(ctx, "c", "", ""); err != nil {
			t.Fatal(err)
		}
		want("a paused run is open", 3, 0)
		if err := s.TerminateWorkflow(ctx, "c", "", ""); err != nil {
			t.Fatal(err)
		}
		want("c terminated", 2, 0)
		// b fails, is retried, and fails again.
		fail := func(task headgate.Claim, head int64) {
			t.Helper()
			mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "b", Lease: task.LeaseRef(), ExpectedHead: head, End: true,
				Events: []headgate.Event{{Seq: head + 1, Kind: headgate.EventWorkflowFailed,
					Error: &headgate.WorkflowError{Message: "x"}}}})
		}
		fail(b, 1)
		want("b failed", 1, 0)
		tid, err := s.RetryWorkflow(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		want("b retried", 2, 0)
		retried := admitOne(t, ctx, s, "wf@v1")
		if retried.Envelope.ID != tid {
			t.Fatalf("admitted %s, want b's retried task %s", retried.Envelope.ID, tid)
		}
		fail(retried, 1)
		want("b failed again", 1, 0)
		if err := s.TerminateWorkflow(ctx, "a/k", "", ""); err != nil {
			t.Fatal(err)
		}
		want("all closed", 0, 0)
	}},
	{"WfVersion/OpenRunsCountedFromTheNextEvent", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", Queue: "wf",
			PackageVersion: "v1"}); err != nil {
			t.Fatal(err)
		}
		// As a run opened by a release that kept no counts: no count, no mark on its row.
		if err := s.Client().HDel(ctx, nsKey(s, "wf:w"), "vopen").Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().Del(ctx, nsKey(s, "verruns")).Err(); err != nil {
			t.Fatal(err)
		}
		wantOpen := func(what string, n int64) {
			t.Helper()
			if got, err := s.OpenRunsByVersion(ctx, "v1"); err != nil || got["v1"] != n {
				t.Errorf("%s: open runs %v, %v; want v1 %d", what, got, err, n)
			}
		}
		if _, err := s.PauseWorkflow(ctx, "w", "", ""); err != nil { // its next event
			t.Fatal(err)
		}
		wantOpen("after the run's next event", 1)
		if err := s.TerminateWorkflow(ctx, "w", "", ""); err != nil {
			t.Fatal(err)
		}
		wantOpen("after it closed", 0)
	}},
}

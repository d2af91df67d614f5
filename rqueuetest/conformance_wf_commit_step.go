package rqueuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// scheduleSteps commits run id's first task, which sends steps (keys) to run as step
// jobs on queue "steps", partition "t-7", rate class "psp", and returns their job ids.
func scheduleSteps(t testing.TB, ctx context.Context, s *headgate.Store, id string, steps ...string) []string {
	t.Helper()
	task := startRun(t, ctx, s, id)
	c := headgate.TaskCommit{WorkflowID: id, Lease: task.LeaseRef(), ExpectedHead: 1, End: true}
	for i, step := range steps {
		c.Events = append(c.Events, headgate.Event{Seq: int64(2 + i), Kind: headgate.EventStepScheduled, Name: step,
			Attempt: 1, Queue: "steps"})
		c.StepJobs = append(c.StepJobs, headgate.StepJob{Step: step, Queue: "steps", Partition: "t-7", RateClass: "psp",
			Weight: 3, Payload: []byte(`{"step":"` + step + `"}`)})
	}
	res := mustCommit(t, ctx, s, c)
	if len(res.StepJobIDs) != len(steps) || res.NextTaskID != "" {
		t.Fatalf("commit of %d steps: %+v, want their job ids and no next task", len(steps), res)
	}
	return res.StepJobIDs
}

// twoOfThreeStepsRunning schedules steps a#1, b#1 and c#1 of run id and admits two step
// jobs: a and b run, c waits. It returns the three jobs' ids and the two claims.
func twoOfThreeStepsRunning(t testing.TB, ctx context.Context, s *headgate.Store, id string) ([]string, []headgate.Claim) {
	t.Helper()
	stepIDs := scheduleSteps(t, ctx, s, id, "a#1", "b#1", "c#1")
	claims := mustAdmit(t, ctx, s, admitReq("w1", 2, "steps"))
	if len(claims) != 2 || claims[0].Envelope.ID != stepIDs[0] || claims[1].Envelope.ID != stepIDs[1] {
		t.Fatalf("admitted %v, want %v", ids(claims), stepIDs[:2])
	}
	return stepIDs, claims
}

// completed is the commit of a step job's successful attempt.
func completed(id, step string, lease headgate.LeaseRef) headgate.StepCommit {
	return headgate.StepCommit{WorkflowID: id, RunID: "r1", Step: step, Lease: lease,
		Events: []headgate.Event{{Kind: headgate.EventStepCompleted, Name: step, Attempt: 1, Result: []byte(`"ok"`)}}}
}

// failedWithRetry is the commit of a step job's failed attempt whose retry (a step job
// on "steps", partition "t-7") is due at due.
func failedWithRetry(id, step string, lease headgate.LeaseRef, due time.Time) headgate.StepCommit {
	return headgate.StepCommit{WorkflowID: id, RunID: "r1", Step: step, Lease: lease, Events: []headgate.Event{
		{Kind: headgate.EventStepFailed, Name: step, Attempt: 1, Error: &headgate.WorkflowError{Message: "503"}, FireAt: due},
		{Kind: headgate.EventStepScheduled, Name: step, Attempt: 2, Queue: "steps", FireAt: due}},
		Retry: &headgate.StepJob{Step: step, Queue: "steps", Partition: "t-7", Payload: []byte(`2`), RunAt: due}}
}

// wantNoStepWaits checks that workflow id's steps wait for no step job (its wfsteps hash
// is gone).
func wantNoStepWaits(t testing.TB, ctx context.Context, s *headgate.Store, id string) {
	t.Helper()
	waits, err := s.Client().HGetAll(ctx, nsKey(s, "wfsteps:"+id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 0 {
		t.Errorf("workflow %s's steps still wait for step jobs: %v", id, waits)
	}
}

// wantNothingToAdmit checks that no job of queue is admitted, now or once every
// schedule and backoff is past.
func wantNothingToAdmit(t testing.TB, ctx context.Context, s *headgate.Store, what, queue string) {
	t.Helper()
	if got := mustAdmit(t, ctx, s, admitReq("w9", 10, queue)); len(got) != 0 {
		t.Errorf("%s: admitted %v from %s, want nothing", what, ids(got), queue)
	}
	advance(t, ctx, s, 24*time.Hour)
	mustPromote(t, ctx, s)
	if got := mustAdmit(t, ctx, s, admitReq("w9", 10, queue)); len(got) != 0 {
		t.Errorf("%s: admitted %v from %s a day later, want nothing", what, ids(got), queue)
	}
}

func hasStepEvent(h []headgate.Event, kind headgate.EventKind, step string) bool {
	for _, e := range h {
		if e.Kind == kind && e.Name == step {
			return true
		}
	}
	return false
}

// wfCommitStepCases cover step jobs: their enqueue by CommitWorkflowTask, and
// CommitWorkflowStep.
var wfCommitStepCases = []conformanceCase{
	{"WfCommitStep/EnqueuedOnItsRoute", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "pay#1")
		j := getJob(t, ctx, s, stepIDs[0])
		if j.Kind != "workflow-step:t" || j.Queue != "steps" || j.PartitionKey != "t-7" || j.RateClass != "psp" ||
			j.Weight != 3 || j.Fingerprint != "wfstep:w/pay#1" || j.State != headgate.StateAvailable ||
			string(j.Payload) != `{"step":"pay#1"}` {
			t.Errorf("step job %+v (state %s)", j.Envelope, j.State)
		}
		if got := admitOne(t, ctx, s, "steps"); got.Envelope.ID != stepIDs[0] {
			t.Errorf("admitted %s from the step queue, want %s", got.Envelope.ID, stepIDs[0])
		}
		if more := mustAdmit(t, ctx, s, admitReq("w2", 10, "wf")); len(more) != 0 {
			t.Errorf("a workflow task waits beside the step: %v", ids(more))
		}
		checkCounts(t, s)
	}},
	{"WfCommitStep/FencedByLeaseAndWait", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "pay#1")
		first := admitOne(t, ctx, s, "steps")
		stale := first.LeaseRef()
		fresh := readmitAfterLeaseLoss(t, ctx, s, stale, "steps")
		err := unchanged(t, ctx, s, "stale step commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", stale))
			return err
		})
		if rejected, ok := errors.AsType[*headgate.LeaseRejectedError](err); !ok || rejected.JobID != stepIDs[0] {
			t.Errorf("stale step commit: %v, want *LeaseRejectedError for %s", err, stepIDs[0])
		}
		err = unchanged(t, ctx, s, "step commit for another run", func() error {
			c := completed("w", "pay#1", fresh.LeaseRef())
			c.RunID = "r0"
			_, err := s.CommitWorkflowStep(ctx, c)
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Step != "pay#1" || np.Reason != "the workflow is on run r1" {
			t.Errorf("commit for run r0: %v, want *StepNotPendingError: the workflow is on run r1", err)
		}
		res, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", fresh.LeaseRef()))
		if err != nil || res.Head != 3 || res.NextTaskID == "" || res.RetryJobID != "" {
			t.Fatalf("holder's step commit: %+v, %v; want head 3 and a next task", res, err)
		}
		if h := mustHistory(t, ctx, s, "w"); len(h) != 3 || h[2].Kind != headgate.EventStepCompleted || string(h[2].Result) != `"ok"` {
			t.Errorf("history %+v, want the step's result last", h)
		}
		wantState(t, ctx, s, stepIDs[0], headgate.StateDeleted)
		// The same commit again, as after a lost reply: the job is acked, nothing appends twice.
		err = unchanged(t, ctx, s, "repeated step commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", fresh.LeaseRef()))
			return err
		})
		if _, ok := errors.AsType[*headgate.LeaseRejectedError](err); !ok {
			t.Errorf("repeated step commit: %v, want *LeaseRejectedError", err)
		}
		if next := admitOne(t, ctx, s, "wf"); next.Envelope.ID != res.NextTaskID {
			t.Errorf("admitted %s, want the next task %s", next.Envelope.ID, res.NextTaskID)
		}
		checkCounts(t, s)
	}},
	{"WfCommitStep/DuplicateStepJobRefused", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		// Two step jobs for one step: the step waits for the second only.
		stepIDs := scheduleSteps(t, ctx, s, "w", "pay#1", "pay#1")
		claims := mustAdmit(t, ctx, s, admitReq("w1", 2, "steps"))
		if len(claims) != 2 || claims[0].Envelope.ID != stepIDs[0] {
			t.Fatalf("admitted %v, want %v", ids(claims), stepIDs)
		}
		err := unchanged(t, ctx, s, "the first job's commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", claims[0].LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the step waits for step job "+stepIDs[1] {
			t.Errorf("the first job's commit: %v, want *StepNotPendingError naming %s", err, stepIDs[1])
		}
		if _, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", claims[1].LeaseRef())); err != nil {
			t.Fatalf("the second job's commit: %v", err)
		}
		err = unchanged(t, ctx, s, "the first job's commit once the step ended", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", claims[0].LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the step waits for no step job" {
			t.Errorf("the first job's commit once the step ended: %v, want *StepNotPendingError", err)
		}
		if h := mustHistory(t, ctx, s, "w"); len(h) != 4 {
			t.Errorf("history has %d events, want one result after the two schedules: %+v", len(h), h)
		}
	}},
	{"WfCommitStep/RetryThenInbox", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		scheduleSteps(t, ctx, s, "w", "pay#1")
		first := admitOne(t, ctx, s, "steps")
		due := epoch.Add(time.Minute)
		res, err := s.CommitWorkflowStep(ctx, headgate.StepCommit{WorkflowID: "w", RunID: "r1", Step: "pay#1",
			Lease: first.LeaseRef(), Events: []headgate.Event{
				{Kind: headgate.EventStepFailed, Name: "pay#1", Attempt: 1, Error: &headgate.WorkflowError{Message: "503"}, FireAt: due},
				{Kind: headgate.EventStepScheduled, Name: "pay#1", Attempt: 2, Queue: "steps", FireAt: due}},
			Retry: &headgate.StepJob{Step: "pay#1", Queue: "steps", Partition: "t-7", Payload: []byte(`2`), RunAt: due}})
		if err != nil || res.RetryJobID == "" || res.NextTaskID != "" || res.Head != 4 {
			t.Fatalf("failed attempt's commit: %+v, %v; want a retry job, no task, head 4", res, err)
		}
		retry := getJob(t, ctx, s, res.RetryJobID)
		if retry.State != headgate.StateScheduled || !retry.ScheduledAt.Equal(due) || retry.Queue != "steps" ||
			retry.PartitionKey != "t-7" || string(retry.Payload) != "2" {
			t.Errorf("retry job %+v in %s, want scheduled at %s on steps/t-7", retry.Envelope, retry.State, due)
		}
		// A signal wakes a task; while it runs, the retry's result waits in the inbox.
		if err := s.SignalWorkflow(ctx, "w", "go", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf")
		advance(t, ctx, s, time.Minute)
		mustPromote(t, ctx, s)
		second := admitOne(t, ctx, s, "steps")
		if second.Envelope.ID != res.RetryJobID {
			t.Fatalf("admitted %s, want the retry %s", second.Envelope.ID, res.RetryJobID)
		}
		c := completed("w", "pay#1", second.LeaseRef())
		c.Events[0].Attempt = 2
		res, err = s.CommitWorkflowStep(ctx, c)
		if err != nil || res.Head != 5 || res.NextTaskID != "" {
			t.Fatalf("commit while the task runs: %+v, %v; want head 5 unmoved and no second task", res, err)
		}
		if h := mustHistory(t, ctx, s, "w"); hasStepEvent(h, headgate.EventStepCompleted, "pay#1") {
			t.Fatalf("the step's result reached the history while the task ran: %+v", h)
		}
		end := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 5, End: true})
		h := mustHistory(t, ctx, s, "w")
		if len(h) != 6 || h[5].Kind != headgate.EventStepCompleted || h[5].Attempt != 2 || end.NextTaskID == "" {
			t.Errorf("after the task's commit: %+v, next task %q; want the result appended and a task for it", h, end.NextTaskID)
		}
		checkCounts(t, s)
	}},
	{"WfCommitStep/GivenUpSteps", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs, claims := twoOfThreeStepsRunning(t, ctx, s, "w")
		if _, err := s.CancelWorkflow(ctx, "w", "changed plans", "op"); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf")
		// a's result reaches the inbox before the task gives a up.
		if _, err := s.CommitWorkflowStep(ctx, completed("w", "a#1", claims[0].LeaseRef())); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 5, End: true,
			GiveUpSteps: []string{"a#1", "b#1", "c#1"}})
		if h := mustHistory(t, ctx, s, "w"); hasStepEvent(h, headgate.EventStepCompleted, "a#1") {
			t.Errorf("a given-up step's result was appended from the inbox: %+v", h)
		}
		wantState(t, ctx, s, stepIDs[1], headgate.StateDeleted)
		wantState(t, ctx, s, stepIDs[2], headgate.StateDeleted)
		err := unchanged(t, ctx, s, "given-up step's commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "b#1", claims[1].LeaseRef()))
			return err
		})
		if _, ok := errors.AsType[*headgate.LeaseRejectedError](err); !ok {
			t.Errorf("commit of a dropped step job: %v, want *LeaseRejectedError", err)
		}
		checkCounts(t, s)
	}},
	{"WfCommitStep/CrashingStepQuarantinedAlone", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "pay#1")
		for crash := 1; crash <= 3; crash++ {
			if c := admitOne(t, ctx, s, "steps"); c.Envelope.ID != stepIDs[0] {
				t.Fatalf("crash %d: admitted %s, want the step job", crash, c.Envelope.ID)
			}
			advance(t, ctx, s, time.Hour)
			r, err := s.ReclaimExpired(ctx, 10)
			if err != nil || len(r) != 1 || r[0].Fingerprint != "wfstep:w/pay#1" || r[0].Quarantined != (crash == 3) {
				t.Fatalf("reclaim %d: %+v, %v", crash, r, err)
			}
			advance(t, ctx, s, time.Hour)
			mustPromote(t, ctx, s)
		}
		wantState(t, ctx, s, stepIDs[0], headgate.StateQuarantined)
		// The workflow's tasks are not held by the step's fingerprint: a cancel runs.
		if _, err := s.CancelWorkflow(ctx, "w", "the provider is down", "op"); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf")
		mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 3, End: true,
			Events:      []headgate.Event{{Seq: 4, Kind: headgate.EventWorkflowCancelled}},
			GiveUpSteps: []string{"pay#1"}})
		wantState(t, ctx, s, stepIDs[0], headgate.StateDeleted)
		if w, err := s.GetWorkflow(ctx, "w"); err != nil || w.Status != headgate.WorkflowCancelled {
			t.Errorf("workflow %+v, %v; want cancelled", w, err)
		}
		checkCounts(t, s)
	}},
	{"WfCommitStep/ClosedRunRefuses", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		scheduleSteps(t, ctx, s, "w", "pay#1")
		held := admitOne(t, ctx, s, "steps")
		if err := s.TerminateWorkflow(ctx, "w", "stuck", "op"); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "step commit after terminate", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "pay#1", held.LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the run is terminated" {
			t.Errorf("step commit after terminate: %v, want *StepNotPendingError: the run is terminated", err)
		}
	}},
	{"WfCommitStep/ClosingCommitDropsStepJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "a#1", "b#1", "c#1")
		running := admitOne(t, ctx, s, "steps") // a runs
		if _, err := s.CancelWorkflow(ctx, "w", "", ""); err != nil {
			t.Fatal(err)
		}
		// The code gives b up and closes the run before it reaches c.
		task := admitOne(t, ctx, s, "wf")
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 5, End: true,
			Events:      []headgate.Event{{Seq: 6, Kind: headgate.EventWorkflowCancelled}},
			GiveUpSteps: []string{"b#1"},
			StepJobs:    []headgate.StepJob{{Step: "d#1", Queue: "steps"}}})
		wantState(t, ctx, s, running.Envelope.ID, headgate.StateRunning)
		for _, id := range []string{stepIDs[1], stepIDs[2], res.StepJobIDs[0]} {
			wantState(t, ctx, s, id, headgate.StateDeleted)
		}
		wantNoStepWaits(t, ctx, s, "w")
		checkCounts(t, s)
		err := unchanged(t, ctx, s, "the running step job's commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "a#1", running.LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the run is cancelled" {
			t.Errorf("the running step job's commit: %v, want *StepNotPendingError: the run is cancelled", err)
		}
		wantNothingToAdmit(t, ctx, s, "after the run closed", "steps")
	}},
	{"WfCommitStep/ContinueAsNewDropsStepJobs", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		stepIDs := scheduleSteps(t, ctx, s, "w", "a#1", "b#1")
		running := admitOne(t, ctx, s, "steps") // a runs
		if err := s.SignalWorkflow(ctx, "w", "go", nil); err != nil {
			t.Fatal(err)
		}
		task := admitOne(t, ctx, s, "wf")
		res := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: task.LeaseRef(), ExpectedHead: 4, End: true,
			NextTask: true, Events: []headgate.Event{
				{Seq: 5, Kind: headgate.EventWorkflowContinuedAsNew, RunID: "r2"},
				{Seq: 6, Kind: headgate.EventWorkflowStarted, WorkflowType: "t", RunID: "r2"}}})
		wantState(t, ctx, s, stepIDs[1], headgate.StateDeleted)
		wantNoStepWaits(t, ctx, s, "w")
		checkCounts(t, s)
		err := unchanged(t, ctx, s, "the old run's step commit", func() error {
			_, err := s.CommitWorkflowStep(ctx, completed("w", "a#1", running.LeaseRef()))
			return err
		})
		if np, ok := errors.AsType[*headgate.StepNotPendingError](err); !ok || np.Reason != "the workflow is on run r2" {
			t.Errorf("the old run's step commit: %v, want *StepNotPendingError: the workflow is on run r2", err)
		}
		// The new run's steps start afresh: its a#1 waits for its own step job.
		next := admitOne(t, ctx, s, "wf")
		if next.Envelope.ID != res.NextTaskID {
			t.Fatalf("admitted %s, want the new run's task %s", next.Envelope.ID, res.NextTaskID)
		}
		again := mustCommit(t, ctx, s, headgate.TaskCommit{WorkflowID: "w", Lease: next.LeaseRef(), ExpectedHead: 6, End: true,
			Events:   []headgate.Event{{Seq: 7, Kind: headgate.EventStepScheduled, Name: "a#1", Attempt: 1, Queue: "steps"}},
			StepJobs: []headgate.StepJob{{Step: "a#1", Queue: "steps"}}})
		if c := admitOne(t, ctx, s, "steps"); c.Envelope.ID != again.StepJobIDs[0] {
			t.Errorf("admitted %s, want the new run's step job %s", c.Envelope.ID, again.StepJobIDs[0])
		}
		checkCounts(t, s)
	}},
}

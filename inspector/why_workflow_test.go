package inspector_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/inspector"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

// whyFlow runs a step (which asks why of its own workflow while its task runs), sleeps
// an hour, awaits "approve" for up to two, then waits for a child that awaits "go".
func whyFlow(insp *inspector.Inspector, during **headgate.WorkflowExplanation) func(ctx workflow.Context, _ int) (int, error) {
	return func(ctx workflow.Context, _ int) (int, error) {
		if _, err := workflow.Step(ctx, "look", func(c context.Context) (int, error) {
			e, err := insp.WhyWorkflow(c, "wf-1")
			*during = e
			return 0, err
		}, nil); err != nil {
			return 0, err
		}
		if err := workflow.Sleep(ctx, "nap", time.Hour); err != nil {
			return 0, err
		}
		if _, _, err := workflow.Await[bool](ctx, "approve", 2*time.Hour); err != nil {
			return 0, err
		}
		return workflow.Child[int](ctx, "sub", "leaf", 0)
	}
}

func leaf(ctx workflow.Context, _ int) (int, error) {
	_, _, err := workflow.Await[bool](ctx, "go", 0)
	return 1, err
}

// wantReasons fails the test unless e's reasons are named want, in order.
func wantReasons(t *testing.T, e *headgate.WorkflowExplanation, want ...headgate.WorkflowWhyReason) {
	t.Helper()
	var got []headgate.WorkflowWhyReason
	for _, r := range e.Reasons {
		got = append(got, r.Reason)
	}
	if len(got) != len(want) {
		t.Fatalf("reasons %v, want %v\n%s", got, want, e)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reasons %v, want %v\n%s", got, want, e)
		}
	}
}

// workflowEnv is a workflowtest env on rdb and an inspector of its namespace.
func workflowEnv(t *testing.T, rdb redis.UniversalClient) (*workflowtest.Env, *inspector.Inspector) {
	t.Helper()
	env := workflowtest.NewOn(t, rdb)
	insp, err := inspector.New(rdb, &inspector.Config{Namespace: env.Store.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	return env, insp
}

func TestWhyWorkflow(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		env, insp := workflowEnv(t, rdb)
		ctx := env.Context()
		var during *headgate.WorkflowExplanation
		workflow.Register(env.Worker, "flow", whyFlow(insp, &during))
		workflow.Register(env.Worker, "leaf", leaf)
		epoch := workflowtest.Epoch

		if _, err := insp.WhyWorkflow(ctx, "nope"); !errors.Is(err, headgate.ErrWorkflowNotFound) {
			t.Fatalf("why of an unknown workflow: %v, want ErrWorkflowNotFound", err)
		}

		env.Start("flow", 0, "wf-1")
		e, err := insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowTaskNotRunning)
		if r := e.Reasons[0]; r.Task == "" || r.TaskWhy == nil || r.TaskWhy.ID != r.Task ||
			r.TaskWhy.State == headgate.StateRunning || len(r.TaskWhy.Reasons) == 0 {
			t.Fatalf("a task not yet run: %+v\n%s", r, e)
		}
		if e.Status != headgate.WorkflowRunning || !e.Now.Equal(epoch) {
			t.Fatalf("status %s now %s\n%s", e.Status, e.Now, e)
		}
		task := e.Reasons[0].Task

		env.Run()
		if during == nil {
			t.Fatal("the step did not run")
		}
		wantReasons(t, during, headgate.WhyWorkflowRunning)
		if r := during.Reasons[0]; r.Task != task || r.TaskWhy.State != headgate.StateRunning ||
			r.TaskWhy.Reasons[0].Reason != headgate.WhyRunning || r.TaskWhy.Reasons[0].LeaseUntil.IsZero() {
			t.Fatalf("the running task: %+v\n%s", r, during)
		}

		e, err = insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowSleeping)
		if r := e.Reasons[0]; r.Timer != "sleep/nap#1" || !r.At.Equal(epoch.Add(time.Hour)) || !r.Since.Equal(epoch) {
			t.Fatalf("sleeping: %+v", r)
		}

		if _, err := insp.PauseWorkflow(ctx, "wf-1", "look"); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.AdvanceClock(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		e, err = insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowPaused, headgate.WhyWorkflowSleeping)
		if e.Status != headgate.WorkflowPaused || !e.Reasons[0].Since.Equal(epoch) {
			t.Fatalf("paused: %+v\n%s", e.Reasons[0], e)
		}
		if _, err := insp.ResumeWorkflow(ctx, "wf-1", ""); err != nil {
			t.Fatal(err)
		}

		env.Advance(time.Hour - time.Minute)
		e, err = insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowAwaitingSignal)
		if r := e.Reasons[0]; r.Signal != "approve" || r.Timer != "await/approve#1" ||
			!r.Since.Equal(epoch.Add(time.Hour)) || !r.At.Equal(epoch.Add(3*time.Hour)) {
			t.Fatalf("awaiting: %+v\n%s", r, e)
		}

		env.Signal("wf-1", "approve", true)
		env.Run()
		e, err = insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowWaitingForChild)
		child := e.Reasons[0].Child
		if r := e.Reasons[0]; child != "wf-1/sub#1" || r.ChildStatus != headgate.WorkflowRunning || !r.Since.Equal(epoch.Add(time.Hour)) {
			t.Fatalf("waiting for the child: %+v\n%s", r, e)
		}
		c, err := insp.WhyWorkflow(ctx, child)
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, c, headgate.WhyWorkflowAwaitingSignal)
		if r := c.Reasons[0]; r.Signal != "" || r.Timer != "" || !r.At.IsZero() {
			t.Fatalf("an await with no timeout: %+v", r)
		}

		env.Signal(child, "go", true)
		env.Advance(time.Minute) // the signal's tasks run at once, as workers run them
		e, err = insp.WhyWorkflow(ctx, "wf-1")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowClosed)
		if r := e.Reasons[0]; r.Status != headgate.WorkflowCompleted || !r.At.Equal(epoch.Add(time.Hour)) {
			t.Fatalf("closed: %+v\n%s", r, e)
		}
	})
}

func TestWhyWorkflowStepRetry(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		env, insp := workflowEnv(t, rdb)
		ctx := env.Context()
		workflow.Register(env.Worker, "flaky", func(ctx workflow.Context, _ int) (int, error) {
			return workflow.Step(ctx, "charge", func(context.Context) (int, error) {
				return 0, errors.New("card declined")
			}, &workflow.StepOptions{Retries: 1, Backoff: time.Minute})
		})
		env.Start("flaky", 0, "wf-2")
		env.Run()
		e, err := insp.WhyWorkflow(ctx, "wf-2")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowStepRetry)
		if r := e.Reasons[0]; r.Step != "charge#1" || r.Attempt != 1 || r.Message != "card declined" ||
			!r.Since.Equal(workflowtest.Epoch) || !r.At.Equal(workflowtest.Epoch.Add(time.Minute)) || r.Timer == "" {
			t.Fatalf("step retry: %+v\n%s", r, e)
		}
	})
}

// TestWhyWorkflowStepJob: a run whose step runs as a job of its own waits for that
// job, and why says so with the job's own reasons, not that it awaits a signal.
func TestWhyWorkflowStepJob(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		env, insp := workflowEnv(t, rdb) // its worker serves the default queue, not payments
		ctx := env.Context()
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, _ int) (int, error) {
			return workflow.Step(ctx, "charge", func(context.Context) (int, error) { return 1, nil },
				&workflow.StepOptions{Job: &workflow.StepJob{Queue: "payments"}})
		})
		env.Start("pay", 0, "wf-3")
		env.Run()
		e, err := insp.WhyWorkflow(ctx, "wf-3")
		if err != nil {
			t.Fatal(err)
		}
		wantReasons(t, e, headgate.WhyWorkflowWaitingForStepJob)
		r := e.Reasons[0]
		if r.Step != "charge#1" || r.Task == "" || !r.Since.Equal(workflowtest.Epoch) || r.TaskWhy == nil ||
			r.TaskWhy.ID != r.Task || r.TaskWhy.State != headgate.StateAvailable {
			t.Fatalf("waiting for the step job: %+v\n%s", r, e)
		}
		j, err := insp.Job(ctx, r.Task)
		if err != nil || j.Job.Queue != "payments" {
			t.Fatalf("the step job %s: %+v, %v", r.Task, j, err)
		}
		if s := e.String(); !strings.Contains(s, "it waits for its step charge#1, scheduled at") ||
			!strings.Contains(s, "as job "+r.Task+", which is not running (available)") ||
			!strings.Contains(s, "no live worker serves its queue payments") {
			t.Fatalf("why in words:\n%s", s)
		}
	})
}

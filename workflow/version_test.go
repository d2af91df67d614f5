package workflow_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

// napper is the code of "greet" at a version: it sleeps an hour, starts a child (of
// the same type, input 0) when n > 0, and returns the version that ran it, then the
// child's.
func napper(version string) func(ctx workflow.Context, n int) (string, error) {
	return func(ctx workflow.Context, n int) (string, error) {
		if err := workflow.Sleep(ctx, "nap", time.Hour); err != nil {
			return "", err
		}
		if n == 0 {
			return version, nil
		}
		child, err := workflow.Child[string](ctx, "sub", "greet", 0)
		return version + "/" + child, err
	}
}

// ranWorkflows returns the workflow ids whose tasks the attempts ran (task ids are
// "wft:<workflow id>:<n>"), sorted and without repeats.
func ranWorkflows(attempts []worker.Attempt) []string {
	var ids []string
	for _, a := range attempts {
		id, ok := strings.CutPrefix(a.JobID, "wft:")
		if i := strings.LastIndexByte(id, ':'); ok && i > 0 {
			ids = append(ids, id[:i])
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// route routes new runs of a workflow type to a version, failing the test on an error.
func route(t *testing.T, env *workflowtest.Env, workflowType, version string) {
	t.Helper()
	if err := env.Store.PutPackageRoute(env.Context(), workflowType, version); err != nil {
		t.Fatalf("route %s to %s: %v", workflowType, version, err)
	}
}

func requireVersion(t *testing.T, env *workflowtest.Env, id, want string) {
	t.Helper()
	row, err := env.Store.GetWorkflow(env.Context(), id)
	if err != nil {
		t.Fatalf("workflow %s: %v", id, err)
	}
	if row.PackageVersion != want {
		t.Fatalf("workflow %s is on version %q, want %q", id, row.PackageVersion, want)
	}
}

func requireRan(t *testing.T, what string, attempts []worker.Attempt, want ...string) {
	t.Helper()
	if got := ranWorkflows(attempts); !slices.Equal(got, want) {
		t.Fatalf("%s ran tasks of %q, want %q", what, got, want)
	}
	for _, a := range attempts {
		if a.Err != nil {
			t.Fatalf("%s: task %s failed: %v", what, a.JobID, a.Err)
		}
	}
}

func TestVersionRunsStayOnTheirVersion(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		workflow.Register(env.Worker, "greet", napper("unversioned"))
		v1 := env.NewWorker("w1", "v1")
		workflow.Register(v1, "greet", napper("v1"))
		route(t, env, "greet", "v1")
		env.Start("greet", 1, "a")
		requireVersion(t, env, "a", "v1")
		requireRan(t, "the unversioned worker", env.Run())
		requireRan(t, "the v1 worker", env.RunWith(v1), "a")

		// v2 joins and new runs are routed to it; a stays on v1.
		v2 := env.NewWorker("w2", "v2")
		workflow.Register(v2, "greet", napper("v2"))
		route(t, env, "greet", "v2")
		env.Start("greet", 0, "b")
		requireVersion(t, env, "b", "v2")
		requireRan(t, "the v2 worker", env.RunWith(v2), "b")
		if err := env.Store.AdvanceClock(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		requireRan(t, "the unversioned worker", env.Run())
		requireRan(t, "the v2 worker", env.RunWith(v2), "b")
		if got, err := workflowtest.Result[string](env, "b"); err != nil || got != "v2" {
			t.Fatalf("b = %q, %v; want v2", got, err)
		}
		if st := env.Status("a"); st != headgate.WorkflowRunning {
			t.Fatalf("a is %s after the v2 worker ran, want running (its tasks are v1's)", st)
		}

		// a wakes on v1 and its child inherits v1, whatever the route says.
		requireRan(t, "the v1 worker", env.RunWith(v1), "a", "a/sub#1")
		requireVersion(t, env, "a/sub#1", "v1")
		if err := env.Store.AdvanceClock(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		requireRan(t, "the v2 worker", env.RunWith(v2))
		requireRan(t, "the v1 worker", env.RunWith(v1), "a", "a/sub#1")
		if got, err := workflowtest.Result[string](env, "a"); err != nil || got != "v1/v1" {
			t.Fatalf("a = %q, %v; want v1/v1 (it and its child on v1)", got, err)
		}
	})
}

func TestVersionContinueAsNewMovesToTheRoute(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		looper := func(version string) func(ctx workflow.Context, n int) (string, error) {
			return func(ctx workflow.Context, n int) (string, error) {
				if _, _, err := workflow.Await[string](ctx, "go", 0); err != nil {
					return "", err
				}
				if n < 2 {
					return "", workflow.ContinueAsNew(ctx, n+1)
				}
				return version, nil
			}
		}
		v1, v2 := env.NewWorker("w1", "v1"), env.NewWorker("w2", "v2")
		workflow.Register(v1, "loop", looper("v1"))
		workflow.Register(v2, "loop", looper("v2"))
		route(t, env, "loop", "v1")
		env.Start("loop", 0, "c")
		requireRan(t, "the v1 worker", env.RunWith(v1), "c")
		// The route has not moved: the new run stays on v1.
		env.Signal("c", "go", "")
		requireRan(t, "the v1 worker", env.RunWith(v1), "c")
		requireVersion(t, env, "c", "v1")

		route(t, env, "loop", "v2")
		env.Signal("c", "go", "")
		requireRan(t, "the v2 worker", env.RunWith(v2)) // the open run is v1's
		requireRan(t, "the v1 worker", env.RunWith(v1), "c")
		requireVersion(t, env, "c", "v2")
		requireRan(t, "the v1 worker", env.RunWith(v1)) // the new run's first task is v2's
		requireRan(t, "the v2 worker", env.RunWith(v2), "c")
		env.Signal("c", "go", "")
		requireRan(t, "the v2 worker", env.RunWith(v2), "c")
		if got, err := workflowtest.Result[string](env, "c"); err != nil || got != "v2" {
			t.Fatalf("c = %q, %v; want v2", got, err)
		}
		runs, err := env.Store.ReadRunChain(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 3 {
			t.Fatalf("run chain has %d runs, want 3", len(runs))
		}
	})
}

func TestVersionDrain(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		parent := func(ctx workflow.Context, n int) (string, error) {
			if n == 0 {
				return "child", nil
			}
			if _, _, err := workflow.Await[string](ctx, "go", 0); err != nil {
				return "", err
			}
			return workflow.Child[string](ctx, "sub", "job", 0)
		}
		v1 := env.NewWorker("w1", "v1", "v2")
		workflow.Register(v1, "job", parent)
		put := func(name string, versions ...string) {
			t.Helper()
			if _, _, err := env.Store.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: name, Versions: versions}); err != nil {
				t.Fatal(err)
			}
		}
		setState := func(name string, d headgate.DesiredState) {
			t.Helper()
			if _, err := env.Store.SetDesiredState(ctx, name, d); err != nil {
				t.Fatal(err)
			}
		}
		start := func(id, version string) error {
			_, err := env.Client.Start(ctx, "job", 1, workflow.StartOptions{ID: id, Version: version})
			return err
		}
		refused := func(id, version string) {
			t.Helper()
			err := start(id, version)
			var draining *headgate.VersionDrainingError
			if !errors.As(err, &draining) || draining.Version != "v1" || draining.WorkflowID != id {
				t.Fatalf("start %s on %q: %v, want a VersionDrainingError of v1", id, version, err)
			}
			if _, err := env.Store.GetWorkflow(ctx, id); !errors.Is(err, headgate.ErrWorkflowNotFound) {
				t.Fatalf("refused start of %s wrote a workflow: %v", id, err)
			}
		}
		put("blue", "v1")
		put("green", "v2")
		route(t, env, "job", "v1")
		if err := start("a", ""); err != nil {
			t.Fatal(err)
		}
		requireRan(t, "the worker", env.RunWith(v1), "a")

		setState("blue", headgate.DesiredDraining)
		refused("b", "")   // by the route
		refused("b", "v1") // named
		if err := start("c", "v2"); err != nil {
			t.Fatalf("start on v2, whose deployment is active: %v", err)
		}
		// A second deployment of v1 that is active serves new runs again; deleting it
		// leaves v1 draining.
		put("blue-canary", "v1")
		if err := start("d", ""); err != nil {
			t.Fatalf("start on v1 with an active deployment: %v", err)
		}
		if _, _, err := env.Store.DeleteWorkerDeployment(ctx, "blue-canary"); err != nil {
			t.Fatal(err)
		}
		refused("e", "")
		// Re-putting blue's spec keeps its draining state; a new spec without v1 leaves
		// v1 listed by no deployment, which is not draining.
		put("blue", "v1")
		refused("e", "")
		put("blue", "v3")
		if err := start("e", ""); err != nil {
			t.Fatalf("start on v1, which no deployment lists: %v", err)
		}
		put("blue", "v1")
		setState("blue", headgate.DesiredDrained)
		refused("f", "")

		// The existing run finishes on its draining version, child included.
		env.Signal("a", "go", "")
		requireRan(t, "the worker", env.RunWith(v1), "a", "a/sub#1", "c", "d", "e")
		requireVersion(t, env, "a/sub#1", "v1")
		if got, err := workflowtest.Result[string](env, "a"); err != nil || got != "child" {
			t.Fatalf("a = %q, %v; want child", got, err)
		}

		setState("blue", headgate.DesiredActive)
		if err := start("f", ""); err != nil {
			t.Fatalf("start on v1 once its deployment is active again: %v", err)
		}
	})
}

func TestVersionedWorkerServesUnversionedRuns(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		w := env.NewWorker("w1", "v1")
		workflow.Register(w, "greet", napper("v1"))
		env.Start("greet", 0, "u")
		requireVersion(t, env, "u", "")
		requireRan(t, "the v1 worker", env.RunWith(w), "u")
		if err := env.Store.AdvanceClock(env.Context(), time.Hour); err != nil {
			t.Fatal(err)
		}
		requireRan(t, "the v1 worker", env.RunWith(w), "u")
		if got, err := workflowtest.Result[string](env, "u"); err != nil || got != "v1" {
			t.Fatalf("u = %q, %v; want v1", got, err)
		}
	})
}

func TestServeVersionsRefusesBadVersions(t *testing.T) {
	env := workflowtest.New(t)
	for _, tc := range []struct {
		name     string
		versions []string
		want     string
	}{
		{"none", nil, "no version"},
		{"empty", []string{"v1", ""}, "versions[1] is empty"},
		{"brace", []string{"v{1}"}, "contains a brace"},
		{"too long", []string{strings.Repeat("v", headgate.MaxVersionBytes+1)}, "longer than the 128 byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want one that says %q", r, tc.want)
				}
			}()
			workflow.ServeVersions(env.NewWorker("w-"+tc.name), tc.versions...)
		})
	}
}

// TestVersionStepJobsStayOnTheRunsVersion: a pinned run's step job goes on its version's
// queue of the step's queue, so a worker on other code that serves the step's queue
// never replays the run to the step; a worker on the run's version does.
func TestVersionStepJobsStayOnTheRunsVersion(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		charger := func(version string) func(ctx workflow.Context, _ int) (string, error) {
			return func(ctx workflow.Context, _ int) (string, error) {
				return workflow.Step(ctx, "charge", func(context.Context) (string, error) { return version, nil },
					&workflow.StepOptions{Job: paymentJob})
			}
		}
		// v1's task worker serves the workflows' queue alone: the step job it schedules
		// waits for a worker that serves the step's queue.
		tasks, err := worker.New(env.Store.Client(), &worker.Config{Namespace: env.Store.Namespace(), ID: "v1-tasks"})
		if err != nil {
			t.Fatal(err)
		}
		workflow.ServeVersions(tasks, "v1")
		workflow.Register(tasks, "pay", charger("v1"))
		v1 := env.NewWorker("v1-all", "v1")
		workflow.Register(v1, "pay", charger("v1"))
		v2 := env.NewWorker("v2-all", "v2")
		workflow.Register(v2, "pay", charger("v2"))
		workflow.Register(env.Worker, "pay", charger("unversioned"))
		route(t, env, "pay", "v1")
		env.Start("pay", 1, "p")
		requireRan(t, "v1's task worker", env.RunWith(tasks), "p")
		waiting, err := env.Store.ListJobs(ctx, headgate.JobFilter{Queue: headgate.VersionedQueue(paymentJob.Queue, "v1"),
			State: headgate.StateAvailable}, headgate.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(waiting.Jobs) != 1 || waiting.Jobs[0].Kind != workflow.StepKind("pay") {
			t.Fatalf("available on v1's payments queue: %+v, want the step job", waiting.Jobs)
		}
		if got := env.RunWith(v2); len(got) != 0 {
			t.Fatalf("the v2 worker ran %+v, want nothing: the step job is v1's", got)
		}
		if got := env.Run(); len(got) != 0 {
			t.Fatalf("the unversioned worker ran %+v, want nothing: the step job is v1's", got)
		}
		env.RunWith(v1)
		if got, err := workflowtest.Result[string](env, "p"); err != nil || got != "v1" {
			t.Fatalf("p = %q, %v; want v1 (its step run by v1's code)", got, err)
		}
	})
}

package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// checkout charges, sleeps 30 days, waits for a shipping signal, and returns a receipt.
func checkout(calls *[]string) func(ctx workflow.Context, o order) (string, error) {
	return func(ctx workflow.Context, o order) (string, error) {
		charge, err := workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			*calls = append(*calls, "charge")
			return "ch_" + o.ID, nil
		}, nil)
		if err != nil {
			return "", err
		}
		if err := workflow.Sleep(ctx, "cooling-off", 30*24*time.Hour); err != nil {
			return "", err
		}
		tracking, ok, err := workflow.Await[string](ctx, "shipped", 0)
		if err != nil || !ok {
			return "", errors.Join(err, errors.New("no shipping"))
		}
		return charge + "/" + tracking, nil
	}
}

func TestKitStepsSleepSignal(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var calls []string
		workflow.Register(env.Worker, "checkout", checkout(&calls))
		env.Start("checkout", order{ID: "42", Amount: 100}, "order-42")
		env.Run()
		if st := env.Status("order-42"); st != headgate.WorkflowRunning {
			t.Fatalf("status after the first tasks: %s\n%s", st, env.Timeline("order-42"))
		}
		if _, err := workflowtest.Result[string](env, "order-42"); !errors.Is(err, workflowtest.ErrStillRunning) {
			t.Fatalf("result while sleeping: %v", err)
		}
		env.Advance(30*24*time.Hour - time.Millisecond)
		if h := env.Timeline("order-42"); strings.Contains(h, "timer_fired") {
			t.Fatalf("the timer fired a millisecond early:\n%s", h)
		}
		env.Signal("order-42", "shipped", "track-7") // before the await is reached
		env.Advance(time.Millisecond)
		got, err := workflowtest.Result[string](env, "order-42")
		if err != nil || got != "ch_42/track-7" {
			t.Fatalf("result = %q, %v; want ch_42/track-7\n%s", got, err, env.Timeline("order-42"))
		}
		if len(calls) != 1 {
			t.Errorf("charge ran %d times, want once (memoized): %v", len(calls), calls)
		}
	})
}

// A task that fails on the code it runs is retried with backoff for as long as it
// takes a deploy to fix the code, not archived after the default 25 attempts with the
// run left waiting on it.
func TestKitBrokenTaskRetriesUntilAFixedDeploy(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		broken := true
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, _ struct{}) (string, error) {
			if broken {
				panic("a bug in the deployed code")
			}
			return "paid", nil
		})
		env.Start("pay", struct{}{}, "p-1")
		failed := len(env.Run())
		for range 40 { // past the default limit, the retry cap of an hour each time
			for _, a := range env.Advance(time.Hour) {
				if a.Outcome != headgate.OutcomeRetry {
					t.Fatalf("attempt %d of the broken task acked %s, want retry", failed+1, a.Outcome)
				}
				failed++
			}
		}
		if failed <= headgate.MaxAttemptsDefault {
			t.Fatalf("%d failed attempts in 40 hours, want more than %d", failed, headgate.MaxAttemptsDefault)
		}
		broken = false // the fixed deploy
		env.Advance(time.Hour)
		if got, err := workflowtest.Result[string](env, "p-1"); err != nil || got != "paid" {
			t.Fatalf("result after the fix: %q, %v; want paid", got, err)
		}
	})
}

func TestKitNonDeterminism(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		refund := false
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, _ struct{}) (int, error) {
			name := "charge"
			if refund {
				name = "refund"
			}
			if _, err := workflow.Step(ctx, name, func(context.Context) (int, error) { return 1, nil }, nil); err != nil {
				return 0, err
			}
			return 0, workflow.Sleep(ctx, "wait", time.Hour)
		})
		env.Start("pay", struct{}{}, "p-1")
		env.Run()
		refund = true // a deploy changed the code under the sleeping run
		attempts := env.Advance(time.Hour)
		if len(attempts) != 1 || attempts[0].Err == nil {
			t.Fatalf("attempts = %+v, want one failed task", attempts)
		}
		want := `history has step charge#1 at seq 2, the code asked for refund#1`
		var nd *workflow.NonDeterminismError
		if !errors.As(attempts[0].Err, &nd) || !strings.Contains(attempts[0].Err.Error(), want) {
			t.Fatalf("task error = %v, want a NonDeterminismError with %q", attempts[0].Err, want)
		}
		if attempts[0].Outcome != headgate.OutcomeRetry {
			t.Errorf("the task was acked %s, want retry (a fixed deploy resumes the run)", attempts[0].Outcome)
		}
		// The recorded history against the changed code, as a unit test would check it.
		err := workflow.Replay(func(ctx workflow.Context, _ struct{}) (int, error) {
			_, err := workflow.Step(ctx, "refund", func(context.Context) (int, error) { return 1, nil }, nil)
			return 0, err
		}, env.History("p-1"))
		if !errors.As(err, &nd) || nd.Seq != 2 || nd.History != "step charge#1" || nd.Code != "refund#1" {
			t.Errorf("Replay = %v, want the mismatch at seq 2", err)
		}
		// And against the old code: it replays.
		refund = false
		if err := workflow.Replay(func(ctx workflow.Context, _ struct{}) (int, error) {
			if _, err := workflow.Step(ctx, "charge", func(context.Context) (int, error) { return 1, nil }, nil); err != nil {
				return 0, err
			}
			return 0, workflow.Sleep(ctx, "wait", time.Hour)
		}, env.History("p-1")); err != nil {
			t.Errorf("Replay of the recording code = %v, want nil", err)
		}
	})
}

func TestKitStepRetriesThenFails(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		runs := 0
		workflow.Register(env.Worker, "flaky", func(ctx workflow.Context, _ struct{}) (string, error) {
			_, err := workflow.Step(ctx, "call", func(context.Context) (string, error) {
				runs++
				return "", errors.New("downstream 503")
			}, &workflow.StepOptions{Retries: 2, Backoff: time.Minute})
			var se *workflow.StepError
			if errors.As(err, &se) {
				return "gave up after " + strconv.Itoa(se.Attempt), nil
			}
			return "", err
		})
		env.Start("flaky", struct{}{}, "f-1")
		env.Run()
		if runs != 1 {
			t.Fatalf("attempts before the backoff: %d, want 1", runs)
		}
		env.Advance(time.Minute - time.Millisecond)
		if runs != 1 {
			t.Fatalf("the retry ran before its backoff: %d attempts", runs)
		}
		env.Advance(time.Millisecond)
		env.Advance(2 * time.Minute) // the second retry's backoff doubled
		got, err := workflowtest.Result[string](env, "f-1")
		if err != nil || got != "gave up after 3" || runs != 3 {
			t.Fatalf("result %q, %v after %d attempts; want gave up after 3\n%s", got, err, runs, env.Timeline("f-1"))
		}
	})
}

// A step that fails on its only attempt says "1 attempt", in the error Result returns
// and in the history's workflow_failed event.
func TestKitStepFailsOnItsOnlyAttempt(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "once", func(ctx workflow.Context, _ struct{}) (string, error) {
			return workflow.Step(ctx, "call", func(context.Context) (string, error) {
				return "", errors.New("downstream 503")
			}, &workflow.StepOptions{Retries: -1})
		})
		env.Start("once", struct{}{}, "o-1")
		env.Run()
		_, err := workflowtest.Result[string](env, "o-1")
		const want = "workflow: step call#1 failed after 1 attempt: downstream 503"
		var fe *workflow.FailedError
		if !errors.As(err, &fe) || fe.Status != "failed" || fe.Message != want {
			t.Fatalf("Result: %v, want a failed run with message %q\n%s", err, want, env.Timeline("o-1"))
		}
		h := env.History("o-1")
		if last := h[len(h)-1]; last.Kind != headgate.EventWorkflowFailed || last.Error == nil || last.Error.Message != want {
			t.Fatalf("last event %+v, want workflow_failed with %q", last, want)
		}
	})
}

func TestKitChildren(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "double", func(ctx workflow.Context, n int) (int, error) {
			if n < 0 {
				return 0, errors.New("negative input")
			}
			return 2 * n, nil
		})
		workflow.Register(env.Worker, "parent", func(ctx workflow.Context, n int) (string, error) {
			a, err := workflow.Child[int](ctx, "ok", "double", n)
			if err != nil {
				return "", err
			}
			_, err = workflow.Child[int](ctx, "bad", "double", -1)
			var ce *workflow.ChildError
			if !errors.As(err, &ce) {
				return "", fmt.Errorf("the failing child returned %v", err)
			}
			return fmt.Sprintf("%d, then %s: %s", a, ce.WorkflowID, ce.Message), nil
		})
		env.Start("parent", 21, "par")
		env.Run()
		got, err := workflowtest.Result[string](env, "par")
		if want := "42, then par/bad#1: negative input"; err != nil || got != want {
			t.Fatalf("result %q, %v; want %q\n%s", got, err, want, env.Timeline("par"))
		}
		if st := env.Status("par/bad#1"); st != headgate.WorkflowFailed {
			t.Errorf("the failing child is %s", st)
		}
		row, err := env.Store.GetWorkflow(env.Context(), "par/ok#1")
		if err != nil || row.ParentWorkflowID != "par" {
			t.Errorf("child row %+v, %v: want parent par", row, err)
		}
	})
}

func TestKitContinueAsNewChain(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "counter", func(ctx workflow.Context, n int) (int, error) {
			v, err := workflow.Step(ctx, "inc", func(context.Context) (int, error) { return n + 1, nil }, nil)
			if err != nil {
				return 0, err
			}
			if v < 101 {
				return 0, workflow.ContinueAsNew(ctx, v)
			}
			return v, nil
		})
		env.Start("counter", 0, "c")
		env.Run()
		got, err := workflowtest.Result[int](env, "c")
		if err != nil || got != 101 {
			t.Fatalf("result %d, %v; want 101", got, err)
		}
		runs, err := env.Store.ReadRunChain(env.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 101 {
			t.Fatalf("run chain has %d runs, want 101 (100 continue-as-new)", len(runs))
		}
		for i, r := range runs[:100] {
			if r.Status != headgate.WorkflowContinuedAsNew || r.ClosedAt.IsZero() {
				t.Fatalf("run %d: %+v, want closed as continued_as_new", i, r)
			}
		}
		if last := runs[100]; last.Status != headgate.WorkflowCompleted {
			t.Errorf("last run %+v, want completed", last)
		}
	})
}

func TestKitCancelRunsCompensation(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var done []string
		workflow.Register(env.Worker, "trip", func(ctx workflow.Context, _ struct{}) (string, error) {
			if _, err := workflow.Step(ctx, "book", func(context.Context) (bool, error) { done = append(done, "book"); return true, nil }, nil); err != nil {
				return "", err
			}
			if err := workflow.Sleep(ctx, "until-departure", 24*time.Hour); err != nil {
				// Compensation runs under a context without cancellation.
				_, cerr := workflow.Step(workflow.WithoutCancel(ctx), "unbook", func(context.Context) (bool, error) {
					done = append(done, "unbook")
					return true, nil
				}, nil)
				return "", errors.Join(err, cerr)
			}
			return "travelled", nil
		})
		env.Start("trip", struct{}{}, "t-1")
		env.Run()
		if err := env.Client.Cancel(env.Context(), "t-1", "customer asked"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		_, err := workflowtest.Result[string](env, "t-1")
		if !errors.Is(err, workflow.ErrCancelled) {
			t.Fatalf("result error %v, want cancelled\n%s", err, env.Timeline("t-1"))
		}
		// The outcome says why it was cancelled, as a terminated run's says why it was.
		if want := `workflow "t-1" cancelled: customer asked`; err.Error() != want {
			t.Errorf("result error %q, want %q", err, want)
		}
		if strings.Join(done, ",") != "book,unbook" {
			t.Errorf("steps run %v, want book then unbook", done)
		}
		// The sleep's timer was retired with the run: advancing past it runs nothing.
		if a := env.Advance(48 * time.Hour); len(a) != 0 {
			t.Errorf("tasks after the cancelled run's timer time: %+v", a)
		}
	})
}

func TestKitParallelPatchedNow(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "fan", func(ctx workflow.Context, n int) ([]int, error) {
			start, err := workflow.Now(ctx)
			if err != nil {
				return nil, err
			}
			if !start.Equal(workflowtest.Epoch) {
				return nil, fmt.Errorf("Now = %s, want the frozen store time", start)
			}
			out := make([]int, n)
			err = workflow.Parallel(ctx, "sq", n, func(ctx workflow.Context, i int) error {
				if i == 1 {
					if err := workflow.Sleep(ctx, "slow", time.Minute); err != nil {
						return err
					}
				}
				v, err := workflow.Step(ctx, "square", func(context.Context) (int, error) { return i * i, nil }, nil)
				out[i] = v
				return err
			})
			if err != nil {
				return nil, err
			}
			if workflow.Patched(ctx, "add-one") {
				out = append(out, 1)
			}
			return out, nil
		})
		env.Start("fan", 3, "fan-1")
		env.Run()
		if st := env.Status("fan-1"); st != headgate.WorkflowRunning {
			t.Fatalf("status while a branch sleeps: %s", st)
		}
		env.Advance(time.Minute)
		got, err := workflowtest.Result[[]int](env, "fan-1")
		if err != nil || fmt.Sprint(got) != "[0 1 4 1]" {
			t.Fatalf("result %v, %v; want [0 1 4 1]\n%s", got, err, env.Timeline("fan-1"))
		}
	})
}

// onBackends runs fn on a test kit env on each backend: miniredis, redis-server and
// Redis Cluster.
func onBackends(t *testing.T, fn func(t *testing.T, env *workflowtest.Env)) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		fn(t, workflowtest.NewOn(t, rdb))
	})
}

func TestKitPauseResumeTerminateRetry(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		failNext := true
		workflow.Register(env.Worker, "steps", func(ctx workflow.Context, _ struct{}) (string, error) {
			if _, err := workflow.Step(ctx, "a", func(context.Context) (int, error) { return 1, nil }, nil); err != nil {
				return "", err
			}
			if _, _, err := workflow.Await[bool](ctx, "go", 0); err != nil {
				return "", err
			}
			_, err := workflow.Step(ctx, "b", func(context.Context) (int, error) {
				if failNext {
					return 0, errors.New("bad day")
				}
				return 2, nil
			}, &workflow.StepOptions{Retries: -1})
			if err != nil {
				return "", err
			}
			return "done", nil
		})
		env.Start("steps", struct{}{}, "s-1")
		env.Run()
		if r, err := env.Client.Pause(ctx, "s-1", "maintenance"); err != nil || r != headgate.PauseApplied {
			t.Fatalf("pause: %s, %v", r, err)
		}
		paused, _, err := env.Store.ListPaused(ctx, "", 10)
		if err != nil || fmt.Sprint(paused) != "[s-1]" {
			t.Fatalf("ListPaused = %v, %v", paused, err)
		}
		env.Signal("s-1", "go", true) // arrives while paused: its task is staged
		if a := env.Run(); len(a) != 0 {
			t.Fatalf("a paused run's task was admitted: %+v", a)
		}
		if r, err := env.Client.Resume(ctx, "s-1", ""); err != nil || r != headgate.PauseApplied {
			t.Fatalf("resume: %s, %v", r, err)
		}
		env.Run()
		_, err = workflowtest.Result[string](env, "s-1")
		var failed *workflow.FailedError
		if !errors.As(err, &failed) || failed.Status != "failed" || !strings.Contains(failed.Message, "bad day") {
			t.Fatalf("result after b failed: %v\n%s", err, env.Timeline("s-1"))
		}
		// The operator fixes the cause and retries from the last good point: a ran once.
		failNext = false
		if err := env.Client.Retry(ctx, "s-1"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		got, err := workflowtest.Result[string](env, "s-1")
		if err != nil || got != "done" {
			t.Fatalf("result after retry: %q, %v\n%s", got, err, env.Timeline("s-1"))
		}
		steps := 0
		for _, e := range env.History("s-1") {
			if e.Kind == headgate.EventStepCompleted && e.Name == "a#1" {
				steps++
			}
		}
		if steps != 1 {
			t.Errorf("step a completed %d times in the history, want 1", steps)
		}

		// Terminate: the run ends without its code, its timer is retired.
		env.Start("steps", struct{}{}, "s-2")
		env.Run()
		if err := env.Client.Terminate(ctx, "s-2", "stuck"); err != nil {
			t.Fatal(err)
		}
		if _, err := workflowtest.Result[string](env, "s-2"); !errors.As(err, &failed) || failed.Status != "terminated" {
			t.Fatalf("terminated result: %v", err)
		}
		var closed *headgate.WorkflowClosedError
		if err := env.Client.Signal(ctx, "s-2", "go", true); !errors.As(err, &closed) {
			t.Errorf("signal to a terminated run: %v, want *WorkflowClosedError", err)
		}
	})
}

// TestKitRetryRefusesRunThatDidNotFail: a retry of a run that is running or completed is
// refused with *WorkflowClosedError naming the status, and its message says that only a
// failed run is retried, not that a running run is over.
func TestKitRetryRefusesRunThatDidNotFail(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		workflow.Register(env.Worker, "waits", func(ctx workflow.Context, _ struct{}) (string, error) {
			v, _, err := workflow.Await[string](ctx, "go", 0)
			return v, err
		})
		env.Start("waits", struct{}{}, "r-1")
		env.Run()
		for _, st := range []headgate.WorkflowStatus{headgate.WorkflowRunning, headgate.WorkflowCompleted} {
			if st == headgate.WorkflowCompleted {
				env.Signal("r-1", "go", "now")
				env.Run()
			}
			head := len(env.History("r-1"))
			err := env.Client.Retry(ctx, "r-1")
			var closed *headgate.WorkflowClosedError
			want := `headgate: workflow "r-1" is ` + string(st) + `: only a failed run can be retried`
			if !errors.As(err, &closed) || closed.Status != st || err.Error() != want {
				t.Errorf("retry of a %s run: %v, want *WorkflowClosedError %q", st, err, want)
			}
			if got := len(env.History("r-1")); got != head || env.Status("r-1") != st {
				t.Errorf("the refused retry changed the run: %d events, was %d; status %s", got, head, env.Status("r-1"))
			}
		}
	})
}

// TestKitRetryFreshAttemptsKeepsSignals: a retry gives the step that failed for good its
// attempts afresh (a retry after its backoff, not one last try), and a signal that came
// while the step failed is still there for the code after the step.
func TestKitRetryFreshAttemptsKeepsSignals(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		failing, calls := true, 0
		workflow.Register(env.Worker, "fresh", func(ctx workflow.Context, _ struct{}) (string, error) {
			_, err := workflow.Step(ctx, "b", func(c context.Context) (int, error) {
				calls++
				if calls == 1 {
					// Sent while the task runs: it waits in the inbox for the commit.
					if err := env.Client.Signal(c, "f-1", "go", "yes"); err != nil {
						return 0, err
					}
				}
				if failing {
					return 0, errors.New("bad day")
				}
				return 2, nil
			}, &workflow.StepOptions{Retries: 1, Backoff: time.Second})
			if err != nil {
				return "", err
			}
			v, _, err := workflow.Await[string](ctx, "go", 0)
			return v, err
		})
		env.Start("fresh", struct{}{}, "f-1")
		env.Run()
		env.Advance(time.Second)
		if st := env.Status("f-1"); st != headgate.WorkflowFailed || calls != 2 {
			t.Fatalf("after two attempts: %s, %d calls\n%s", st, calls, env.Timeline("f-1"))
		}
		if err := env.Client.Retry(ctx, "f-1"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		if st := env.Status("f-1"); st != headgate.WorkflowRunning || calls != 3 {
			t.Fatalf("after the retry's first attempt: %s, %d calls, want running on its backoff\n%s",
				st, calls, env.Timeline("f-1"))
		}
		failing = false
		env.Advance(time.Second)
		got, err := workflowtest.Result[string](env, "f-1")
		if err != nil || got != "yes" || calls != 4 {
			t.Fatalf("result after the retry: %q, %v, %d calls\n%s", got, err, calls, env.Timeline("f-1"))
		}
	})
}

// TestKitRetryKeepsSignalAfterFailure: a signal that reached the run while its last task
// failed (the commit appends it after workflow_failed) survives the retry.
func TestKitRetryKeepsSignalAfterFailure(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		failing := true
		workflow.Register(env.Worker, "late-signal", func(ctx workflow.Context, _ struct{}) (string, error) {
			_, err := workflow.Step(ctx, "b", func(c context.Context) (int, error) {
				if failing {
					if err := env.Client.Signal(c, "l-1", "go", "yes"); err != nil {
						return 0, err
					}
					return 0, errors.New("bad day")
				}
				return 2, nil
			}, &workflow.StepOptions{Retries: -1})
			if err != nil {
				return "", err
			}
			v, _, err := workflow.Await[string](ctx, "go", 0)
			return v, err
		})
		env.Start("late-signal", struct{}{}, "l-1")
		env.Run()
		if h := env.History("l-1"); h[len(h)-1].Kind != headgate.EventSignalReceived {
			t.Fatalf("the signal is not after the failure:\n%s", env.Timeline("l-1"))
		}
		failing = false
		if err := env.Client.Retry(env.Context(), "l-1"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		got, err := workflowtest.Result[string](env, "l-1")
		if err != nil || got != "yes" {
			t.Fatalf("result after the retry: %q, %v\n%s", got, err, env.Timeline("l-1"))
		}
	})
}

// TestKitQuickStepsOneCommit: quick steps and a sleep of no time run in one task whose
// final commit carries them all; a step that finds the pending work CheckpointAfter old
// (on the tasks' clock, stepped by the test) or asks for Checkpoint commits it before
// the code goes on, as a step that reads the history sees.
func TestKitQuickStepsOneCommit(t *testing.T) {
	// Not parallel with other tests: the tasks' clock is the package's.
	var (
		mu   sync.Mutex // one backend's run at a time: each steps the shared clock
		base = time.Now()
		off  atomic.Int64
	)
	t.Cleanup(workflow.SetClock(func() time.Time { return base.Add(time.Duration(off.Load())) }))
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		env := workflowtest.NewOn(t, rdb)
		seen := map[string]string{} // step -> the step events committed when it ran
		step := func(ctx workflow.Context, name string, opts *workflow.StepOptions, also func()) error {
			_, err := workflow.Step(ctx, name, func(ctx context.Context) (int, error) {
				h, err := env.Store.ReadHistory(ctx, "quick-1")
				if err != nil {
					return 0, err
				}
				var names []string
				for _, e := range h {
					if e.Kind == headgate.EventStepCompleted || e.Kind == headgate.EventTimerFired {
						names = append(names, e.Name+e.TimerID)
					}
				}
				seen[name] = strings.Join(names, ",")
				if also != nil {
					also()
				}
				return 0, nil
			}, opts)
			return err
		}
		workflow.Register(env.Worker, "quick", func(ctx workflow.Context, _ struct{}) (string, error) {
			for _, s := range []struct {
				name  string
				opts  *workflow.StepOptions
				also  func()
				sleep bool
			}{
				{name: "a"}, {name: "b", sleep: true}, {name: "c"},
				{name: "d", also: func() { off.Add(int64(workflow.CheckpointAfter)) }}, // a slow step
				{name: "e", opts: &workflow.StepOptions{Checkpoint: true}}, {name: "f"},
			} {
				if err := step(ctx, s.name, s.opts, s.also); err != nil {
					return "", err
				}
				if s.sleep {
					if err := workflow.Sleep(ctx, "nap", 0); err != nil {
						return "", err
					}
				}
			}
			return "done", nil
		})
		mu.Lock()
		env.Start("quick", struct{}{}, "quick-1")
		attempts := env.Run()
		mu.Unlock()
		if len(attempts) != 1 {
			t.Fatalf("%d tasks, want 1: a sleep of no time needs no timer\n%s", len(attempts), env.Timeline("quick-1"))
		}
		got, err := workflowtest.Result[string](env, "quick-1")
		if err != nil || got != "done" {
			t.Fatalf("result %q, %v", got, err)
		}
		want := map[string]string{"a": "", "b": "", "c": "", "d": "",
			"e": "a#1,b#1,sleep/nap#1,c#1,d#1", "f": "a#1,b#1,sleep/nap#1,c#1,d#1,e#1"}
		for name, w := range want {
			if seen[name] != w {
				t.Errorf("step %s saw committed %q, want %q", name, seen[name], w)
			}
		}
		timeline := env.Timeline("quick-1")
		if !strings.Contains(timeline, "timer_started nap#1 sleep/nap#1") || !strings.Contains(timeline, "timer_fired sleep/nap#1") {
			t.Errorf("the sleep of no time is not in the history as armed and fired:\n%s", timeline)
		}
		// The history replays: the sleep matches its recorded timer.
		var calls []string
		if err := workflow.Replay(func(ctx workflow.Context, _ struct{}) (string, error) {
			for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
				if _, err := workflow.Step(ctx, name, func(context.Context) (int, error) {
					calls = append(calls, name)
					return 0, nil
				}, nil); err != nil {
					return "", err
				}
				if name == "b" {
					if err := workflow.Sleep(ctx, "nap", 0); err != nil {
						return "", err
					}
				}
			}
			return "done", nil
		}, env.History("quick-1")); err != nil || len(calls) != 0 {
			t.Errorf("replay: %v, steps run %v", err, calls)
		}
	})
}

// TestKitCancelParentCancelsChildren: a run that closes cancelled cancels the children it
// waits for; a child that ended before is left as it was.
func TestKitCancelParentCancelsChildren(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "kid", func(ctx workflow.Context, d time.Duration) (string, error) {
			return "woke", workflow.Sleep(ctx, "nap", d)
		})
		workflow.Register(env.Worker, "parent", func(ctx workflow.Context, _ struct{}) (string, error) {
			quick, err := workflow.Child[string](ctx, "quick", "kid", time.Duration(0))
			if err != nil {
				return "", err
			}
			slow, err := workflow.Child[string](ctx, "slow", "kid", 24*time.Hour)
			return quick + slow, err
		})
		env.Start("parent", struct{}{}, "p-1")
		env.Run()
		if st := env.Status("p-1/slow#1"); st != headgate.WorkflowRunning {
			t.Fatalf("the slow child is %s before the cancel\n%s", st, env.Timeline("p-1"))
		}
		if err := env.Client.Cancel(env.Context(), "p-1", "no longer needed"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		for id, want := range map[string]headgate.WorkflowStatus{"p-1": headgate.WorkflowCancelled,
			"p-1/quick#1": headgate.WorkflowCompleted, "p-1/slow#1": headgate.WorkflowCancelled} {
			if st := env.Status(id); st != want {
				t.Errorf("%s is %s, want %s\n%s", id, st, want, env.Timeline(id))
			}
		}
		if !strings.Contains(env.Timeline("p-1/slow#1"), "workflow_cancel_requested") {
			t.Errorf("the slow child's history has no cancel request:\n%s", env.Timeline("p-1/slow#1"))
		}
	})
}

// Each run of a continue-as-new chain starts its own children, though their names
// repeat: a later run's child is not the earlier run's closed one, so the run does not
// wait for an outcome that never comes.
func TestKitContinueAsNewStartsFreshChildren(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "ship", func(ctx workflow.Context, n int) (int, error) { return n * 10, nil })
		workflow.Register(env.Worker, "batch", func(ctx workflow.Context, n int) (int, error) {
			shipped, err := workflow.Child[int](ctx, "ship", "ship", n)
			if err != nil {
				return 0, err
			}
			if n < 3 {
				return 0, workflow.ContinueAsNew(ctx, n+1)
			}
			return shipped, nil
		})
		env.Start("batch", 1, "b")
		env.Run()
		got, err := workflowtest.Result[int](env, "b")
		if err != nil || got != 30 {
			t.Fatalf("result %d, %v; want 30\n%s", got, err, env.Timeline("b"))
		}
		runs, err := env.Store.ReadRunChain(env.Context(), "b")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 3 {
			t.Fatalf("run chain has %d runs, want 3", len(runs))
		}
		want := []string{"b/ship#1", "b/" + runs[1].RunID + "/ship#1", "b/" + runs[2].RunID + "/ship#1"}
		var ids []string
		for _, e := range env.History("b") {
			if e.Kind == headgate.EventChildStarted {
				ids = append(ids, e.ChildWorkflowID)
			}
		}
		if strings.Join(ids, " ") != strings.Join(want, " ") {
			t.Fatalf("children %v, want %v", ids, want)
		}
		for _, id := range want {
			row, err := env.Store.GetWorkflow(env.Context(), id)
			if err != nil || row.Status != headgate.WorkflowCompleted || row.ParentWorkflowID != "b" {
				t.Fatalf("child %q: %+v, %v; want completed, child of b", id, row, err)
			}
		}
	})
}

// A retry runs again the step that failed the run, not a step that failed earlier and
// that the code went on from: the steps that completed in between (a charge) keep their
// results and do not run twice.
func TestKitRetryKeepsStepsPastAHandledFailure(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		charges, shipments := 0, 0
		workflow.Register(env.Worker, "order", func(ctx workflow.Context, _ struct{}) (string, error) {
			// A notification that may fail: the order goes on without it.
			_, _ = workflow.Step(ctx, "notify", func(context.Context) (bool, error) {
				return false, errors.New("smtp down")
			}, &workflow.StepOptions{Retries: -1})
			charge, err := workflow.Step(ctx, "charge", func(context.Context) (string, error) {
				charges++
				return "ch_1", nil
			}, nil)
			if err != nil {
				return "", err
			}
			return workflow.Step(ctx, "ship", func(context.Context) (string, error) {
				shipments++
				if shipments == 1 {
					return "", errors.New("carrier down")
				}
				return charge + " shipped", nil
			}, &workflow.StepOptions{Retries: -1})
		})
		env.Start("order", struct{}{}, "o-1")
		env.Run()
		if st := env.Status("o-1"); st != headgate.WorkflowFailed {
			t.Fatalf("status %s, want failed\n%s", st, env.Timeline("o-1"))
		}
		if err := env.Client.Retry(env.Context(), "o-1"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		got, err := workflowtest.Result[string](env, "o-1")
		if err != nil || got != "ch_1 shipped" {
			t.Fatalf("result %q, %v; want ch_1 shipped\n%s", got, err, env.Timeline("o-1"))
		}
		if charges != 1 || shipments != 2 {
			t.Errorf("charged %d times and shipped %d; want once and twice (the retry ran ship only)\n%s",
				charges, shipments, env.Timeline("o-1"))
		}
	})
}

// Step returns its recorded result, decoded from JSON, on the task that ran it as on
// every replay: a map's number is a float64 on both, not an int first and a float64
// after the run slept (a type switch that took the int branch once and the float64
// branch after would make the code take another path on replay).
func TestKitStepReturnsTheRecordedResultFirstToo(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var seen []string
		workflow.Register(env.Worker, "count", func(ctx workflow.Context, _ struct{}) (string, error) {
			m, err := workflow.Step(ctx, "load", func(context.Context) (map[string]any, error) {
				return map[string]any{"n": 3}, nil
			}, nil)
			if err != nil {
				return "", err
			}
			seen = append(seen, fmt.Sprintf("%T", m["n"]))
			if err := workflow.Sleep(ctx, "nap", time.Hour); err != nil {
				return "", err
			}
			return fmt.Sprint(m["n"]), nil
		})
		env.Start("count", struct{}{}, "c-1")
		env.Run()
		env.Advance(time.Hour)
		if got, err := workflowtest.Result[string](env, "c-1"); err != nil || got != "3" {
			t.Fatalf("result %q, %v; want 3", got, err)
		}
		if strings.Join(seen, " ") != "float64 float64" {
			t.Errorf("the step's number was %v on the two tasks, want float64 on both", seen)
		}
	})
}

// A run terminated with no reason fails Result with `workflow "id" terminated`, not
// with a colon and nothing after it.
func TestKitResultOfATerminateWithoutReason(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "nap", func(ctx workflow.Context, _ struct{}) (string, error) {
			return "", workflow.Sleep(ctx, "nap", time.Hour)
		})
		env.Start("nap", struct{}{}, "n-1")
		env.Run()
		if err := env.Client.Terminate(env.Context(), "n-1", ""); err != nil {
			t.Fatal(err)
		}
		_, err := workflowtest.Result[string](env, "n-1")
		var fe *workflow.FailedError
		if !errors.As(err, &fe) || fe.Status != "terminated" || err.Error() != `workflow "n-1" terminated` {
			t.Fatalf("Result: %q, want a terminated FailedError saying `workflow \"n-1\" terminated`", err)
		}
	})
}

// The signals a run received and no await took go to the run ContinueAsNew starts, in
// the order they came: a signal is kept until the code awaits it, whichever run that
// is, and is not dropped with the old run's history.
func TestKitContinueAsNewKeepsUnreadSignals(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var got []int
		workflow.Register(env.Worker, "sum", func(ctx workflow.Context, total int) (int, error) {
			for range 2 {
				v, _, err := workflow.Await[int](ctx, "add", 0)
				if err != nil {
					return 0, err
				}
				total += v
			}
			if total < 100 {
				return 0, workflow.ContinueAsNew(ctx, total)
			}
			return total, nil
		})
		env.Start("sum", 0, "s-1")
		for _, v := range []int{1, 2, 3, 4, 90} { // before the first task: five in the first run
			env.Signal("s-1", "add", v)
		}
		env.Run()
		env.Signal("s-1", "add", 5)
		env.Run()
		total, err := workflowtest.Result[int](env, "s-1")
		if err != nil || total != 105 {
			t.Fatalf("result %d, %v; want 105 (every signal added once)\n%s", total, err, env.Timeline("s-1"))
		}
		for _, e := range env.History("s-1") {
			if e.Kind == headgate.EventSignalReceived && e.Name == "add" {
				var v int
				if err := json.Unmarshal(e.Payload, &v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
		}
		// Each run's history holds the signals it had: 1..90, then 3, 4, 90, then 90, 5.
		if want := "[1 2 3 4 90 3 4 90 90 5]"; fmt.Sprint(got) != want {
			t.Errorf("signals in the history %v, want %s", got, want)
		}
	})
}

// A name the runtime cannot hold is an *headgate.InvalidError naming the argument that
// carried it, from Client.Start as from the Context's functions; a child of a type no
// worker can register starts nothing (it would never run); a negative count of
// Parallel branches is refused, not a panic that fails every task of the run.
func TestKitBadNamesAreInvalidErrors(t *testing.T) {
	t.Parallel()
	env := workflowtest.New(t)
	field := func(err error) string {
		if inv, ok := errors.AsType[*headgate.InvalidError](err); ok {
			return inv.Field
		}
		return fmt.Sprintf("not an InvalidError: %v", err)
	}
	if _, err := env.Client.Start(env.Context(), "check/out", 1, workflow.StartOptions{ID: "x"}); field(err) != "workflowType" {
		t.Errorf("Start of type check/out: %v, want an InvalidError of workflowType", err)
	}
	var got []string
	workflow.Register(env.Worker, "names", func(ctx workflow.Context, _ struct{}) (string, error) {
		_, err := workflow.Step(ctx, "charge/eu", func(context.Context) (int, error) { return 1, nil }, nil)
		got = append(got, field(err))
		_, _, err = workflow.Await[int](ctx, "shipped#2", time.Hour)
		got = append(got, field(err))
		got = append(got, field(workflow.Sleep(ctx, "", time.Hour)))
		_, err = workflow.Child[int](ctx, "ship", "ship/eu", 1)
		got = append(got, field(err))
		got = append(got, field(workflow.Parallel(ctx, "fan", -1, func(workflow.Context, int) error { return nil })))
		return "done", nil
	})
	env.Start("names", struct{}{}, "n-1")
	env.Run()
	if want := "name signal name workflowType n"; strings.Join(got, " ") != want {
		t.Errorf("fields %q, want %q", strings.Join(got, " "), want)
	}
	if r, err := workflowtest.Result[string](env, "n-1"); err != nil || r != "done" {
		t.Fatalf("result %q, %v\n%s", r, err, env.Timeline("n-1"))
	}
	for _, e := range env.History("n-1") {
		if e.Kind != headgate.EventWorkflowStarted && e.Kind != headgate.EventWorkflowCompleted {
			t.Errorf("the refused calls recorded %s %s", e.Kind, e.Name)
		}
	}
}

// A run that continues as new with more unread signals than one commit holds hands on
// as many as fit, in the order they came, and moves on: it does not fail every task on
// a commit the store refuses.
func TestKitContinueAsNewWithMoreUnreadSignalsThanACommitHolds(t *testing.T) {
	t.Parallel()
	env := workflowtest.New(t)
	workflow.Register(env.Worker, "flood", func(ctx workflow.Context, round int) (int, error) {
		if round == 0 {
			return 0, workflow.ContinueAsNew(ctx, 1)
		}
		v, _, err := workflow.Await[int](ctx, "n", 0)
		return v, err
	})
	env.Start("flood", 0, "f-1")
	for i := range headgate.MaxAppendEvents + 5 {
		env.Signal("f-1", "n", i)
	}
	env.Run()
	got, err := workflowtest.Result[int](env, "f-1")
	if err != nil || got != 0 {
		t.Fatalf("result %d, %v; want the first signal's 0", got, err)
	}
	row, err := env.Store.GetWorkflow(env.Context(), "f-1")
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, e := range env.History("f-1") {
		if e.Seq > row.RunStartSeq && e.Kind == headgate.EventSignalReceived {
			carried++
		}
	}
	if want := headgate.MaxAppendEvents - 2; carried != want {
		t.Errorf("the new run has %d signals, want %d (a commit's worth)", carried, want)
	}
}

// A child whose id would be longer than an id can be (a long parent id, or a run after
// continue-as-new, whose children's ids hold its run id) is refused by Child with an
// *headgate.InvalidError the code can handle, not by the commit, which would fail every
// task of the run.
func TestKitChildIDTooLong(t *testing.T) {
	t.Parallel()
	env := workflowtest.New(t)
	workflow.Register(env.Worker, "ship", func(ctx workflow.Context, n int) (int, error) { return n, nil })
	workflow.Register(env.Worker, "parent", func(ctx workflow.Context, _ struct{}) (string, error) {
		_, err := workflow.Child[int](ctx, "ship", "ship", 1)
		if inv, ok := errors.AsType[*headgate.InvalidError](err); ok {
			return "refused: " + inv.Field, nil
		}
		return "", fmt.Errorf("Child: %v, want an InvalidError", err)
	})
	id := strings.Repeat("p", headgate.MaxNameBytes-3) // "<id>/ship#1" is 4 bytes too long
	env.Start("parent", struct{}{}, id)
	env.Run()
	if got, err := workflowtest.Result[string](env, id); err != nil || got != "refused: name" {
		t.Fatalf("result %q, %v; want refused: name", got, err)
	}
}

// TestKitAdvancePassesEveryTimerOnTheWay: an Advance longer than two sleeps in a row
// fires both, each at its own fire time, as workers would while that time passes;
// it does not jump past the first and arm the second from the end of the step.
func TestKitAdvancePassesEveryTimerOnTheWay(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		workflow.Register(env.Worker, "two-sleeps", func(ctx workflow.Context, _ struct{}) (string, error) {
			if err := workflow.Sleep(ctx, "first", time.Hour); err != nil {
				return "", err
			}
			if err := workflow.Sleep(ctx, "second", time.Hour); err != nil {
				return "", err
			}
			return "rested", nil
		})
		env.Start("two-sleeps", struct{}{}, "nap")
		env.Run()
		env.Advance(3 * time.Hour)
		got, err := workflowtest.Result[string](env, "nap")
		if err != nil || got != "rested" {
			t.Fatalf("after 3h: %q, %v; want rested\n%s", got, err, env.Timeline("nap"))
		}
		var fired []time.Time
		for _, e := range env.History("nap") {
			if e.Kind == headgate.EventTimerFired {
				fired = append(fired, e.RecordedAt.UTC())
			}
		}
		want := []time.Time{workflowtest.Epoch.Add(time.Hour), workflowtest.Epoch.Add(2 * time.Hour)}
		if !slices.Equal(fired, want) {
			t.Errorf("timers fired at %v, want %v\n%s", fired, want, env.Timeline("nap"))
		}
		now, err := env.Store.Now(env.Context())
		if err != nil {
			t.Fatal(err)
		}
		if want := workflowtest.Epoch.Add(3 * time.Hour); !now.Equal(want) {
			t.Errorf("store clock after Advance(3h) = %v, want %v", now.UTC(), want)
		}
	})
}

// TestKitCodeThatReturnsBeforeItsHistoryEnds: code changed to return before commands
// its history recorded (a step and a sleep removed from the end) took another path than
// the run did: Replay says so, and a task on that code fails with the
// NonDeterminismError instead of completing the run past history it never replayed;
// the right code resumes it.
func TestKitCodeThatReturnsBeforeItsHistoryEnds(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		step := func(ctx workflow.Context, name string) error {
			_, err := workflow.Step(ctx, name, func(context.Context) (int, error) { return 1, nil }, nil)
			return err
		}
		v1 := func(ctx workflow.Context, _ int) (string, error) {
			if err := step(ctx, "a"); err != nil {
				return "", err
			}
			if err := step(ctx, "b"); err != nil {
				return "", err
			}
			return "v1", workflow.Sleep(ctx, "nap", time.Hour)
		}
		v2 := func(ctx workflow.Context, _ int) (string, error) {
			return "v2", step(ctx, "a")
		}
		workflow.Register(env.Worker, "flow", v1)
		env.Start("flow", 0, "f-1")
		env.Run()
		history := env.History("f-1")
		if err := workflow.Replay(v1, history); err != nil {
			t.Fatalf("Replay of the code that made the history: %v", err)
		}
		var nd *workflow.NonDeterminismError
		if err := workflow.Replay(v2, history); !errors.As(err, &nd) || nd.History != "step b#1" || nd.Seq != 3 {
			t.Fatalf("Replay of code that returns after step a: %v, want a NonDeterminismError at step b#1, seq 3", err)
		}

		w2 := env.NewWorker("v2")
		workflow.Register(w2, "flow", v2)
		if err := env.Store.AdvanceClock(env.Context(), time.Hour); err != nil {
			t.Fatal(err)
		}
		attempts := env.RunWith(w2)
		if len(attempts) != 1 || !errors.As(attempts[0].Err, &nd) {
			t.Fatalf("the task on the changed code: %+v, want one attempt failed with a NonDeterminismError", attempts)
		}
		if st := env.Status("f-1"); st != headgate.WorkflowRunning {
			t.Fatalf("the run is %s after the changed code's task, want running\n%s", st, env.Timeline("f-1"))
		}
		env.Advance(time.Hour) // the task's retry, on the code the run was made with
		if got, err := workflowtest.Result[string](env, "f-1"); err != nil || got != "v1" {
			t.Fatalf("result on the right code: %q, %v\n%s", got, err, env.Timeline("f-1"))
		}
	})
}

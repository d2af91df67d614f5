package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
	"github.com/headgate/headgate/workflowtest"
)

// paymentJob is where the tests' step jobs run.
var paymentJob = &workflow.StepJob{Queue: "payments", Partition: "tenant-7", RateClass: "psp"}

// onStepBackends is onBackends with the env's worker serving the step jobs' queue
// after the workflows'.
func onStepBackends(t *testing.T, fn func(t *testing.T, env *workflowtest.Env)) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		fn(t, workflowtest.NewOn(t, rdb, headgate.QueueDefault, paymentJob.Queue))
	})
}

// runningOn lists the jobs running on a queue.
func runningOn(ctx context.Context, s *headgate.Store, queue string) ([]*headgate.Job, error) {
	page, err := s.ListJobs(ctx, headgate.JobFilter{Queue: queue, State: headgate.StateRunning}, headgate.Page{})
	if err != nil {
		return nil, err
	}
	return page.Jobs, nil
}

// TestStepJobRunsOnItsQueue: a step with a Job option runs as a job of kind
// workflow-step:<type> admitted on its queue, partition and rate class while the
// workflow's task is not running; its result is memoized for every later replay.
func TestStepJobRunsOnItsQueue(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		calls := 0
		var seen []*headgate.Job
		var seenErr error
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, amount int) (string, error) {
			charge, err := workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
				calls++
				running, err := runningOn(ctx, env.Store, paymentJob.Queue)
				tasks, terr := runningOn(ctx, env.Store, headgate.QueueDefault)
				seen, seenErr = append(running, tasks...), errors.Join(err, terr)
				return fmt.Sprintf("ch_%d", amount), nil
			}, &workflow.StepOptions{Job: paymentJob})
			if err != nil {
				return "", err
			}
			if err := workflow.Sleep(ctx, "settle", time.Hour); err != nil {
				return "", err
			}
			return charge + "/settled", nil
		})
		env.Start("pay", 42, "pay-1")
		attempts := env.Run()
		if seenErr != nil {
			t.Fatal(seenErr)
		}
		if calls != 1 || len(seen) != 1 {
			t.Fatalf("the step ran %d times; jobs running while it ran: %+v", calls, seen)
		}
		if j := seen[0]; j.Kind != workflow.StepKind("pay") || j.Queue != "payments" || j.PartitionKey != "tenant-7" ||
			j.RateClass != "psp" {
			t.Errorf("the step ran as %s on queue %q, partition %q, rate class %q; want %s on payments/tenant-7/psp",
				j.Kind, j.Queue, j.PartitionKey, j.RateClass, workflow.StepKind("pay"))
		}
		kinds := []string{}
		for _, a := range attempts {
			kinds = append(kinds, a.Kind)
		}
		if want := "workflow:pay workflow-step:pay workflow:pay"; strings.Join(kinds, " ") != want {
			t.Errorf("attempts %v, want %s: the task ends at the step, the step job wakes the next", kinds, want)
		}
		h := env.History("pay-1")
		if len(h) < 3 || h[1].Kind != headgate.EventStepScheduled || h[1].Queue != "payments" ||
			h[1].Partition != "tenant-7" || h[1].RateClass != "psp" || h[2].Kind != headgate.EventStepCompleted {
			t.Fatalf("history does not schedule the step on its queue, then complete it:\n%s", env.Timeline("pay-1"))
		}
		env.Advance(time.Hour) // the task after the sleep replays the step from the history
		got, err := workflowtest.Result[string](env, "pay-1")
		if err != nil || got != "ch_42/settled" || calls != 1 {
			t.Fatalf("result %q, %v after %d runs of the step; want ch_42/settled and one run\n%s", got, err, calls,
				env.Timeline("pay-1"))
		}
		if err := workflow.Replay(func(ctx workflow.Context, amount int) (string, error) {
			charge, err := workflow.Step(ctx, "charge", func(context.Context) (string, error) {
				return "", errors.New("a replay ran the step")
			}, &workflow.StepOptions{Job: paymentJob})
			if err != nil {
				return "", err
			}
			return charge + "/settled", workflow.Sleep(ctx, "settle", time.Hour)
		}, env.History("pay-1")); err != nil {
			t.Errorf("Replay of a step job's history: %v", err)
		}
		if page, err := env.Store.ListJobs(ctx, headgate.JobFilter{Queue: "payments", State: headgate.StateArchived},
			headgate.Page{}); err != nil || len(page.Jobs) != 0 {
			t.Errorf("archived step jobs %+v, %v; want none", page, err)
		}
	})
}

// TestStepJobRetriesWithBackoff: a failed attempt of a step job is recorded and retried
// as a new step job on the same queue after the step's backoff, doubled per retry; the
// last failure is the step's error.
func TestStepJobRetriesWithBackoff(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		runs := 0
		workflow.Register(env.Worker, "flaky", func(ctx workflow.Context, failures int) (string, error) {
			v, err := workflow.Step(ctx, "call", func(context.Context) (int, error) {
				runs++
				if runs <= failures {
					return 0, fmt.Errorf("downstream 503 (%d)", runs)
				}
				return runs, nil
			}, &workflow.StepOptions{Retries: 2, Backoff: time.Minute, Job: paymentJob})
			if se, ok := errors.AsType[*workflow.StepError](err); ok {
				return fmt.Sprintf("gave up after %d: %s", se.Attempt, se.Message), nil
			}
			return fmt.Sprint("ok on run ", v), err
		})
		env.Start("flaky", 2, "f-1")
		env.Run()
		if runs != 1 {
			t.Fatalf("attempts before the backoff: %d, want 1", runs)
		}
		h := env.History("f-1")
		if n := len(h); n < 2 || h[n-2].Kind != headgate.EventStepFailed || h[n-2].FireAt.IsZero() ||
			h[n-1].Kind != headgate.EventStepScheduled || h[n-1].Attempt != 2 || h[n-1].Queue != "payments" {
			t.Fatalf("history after a failed attempt:\n%s", env.Timeline("f-1"))
		}
		env.Advance(time.Minute - time.Millisecond)
		if runs != 1 {
			t.Fatalf("the retry ran before its backoff: %d attempts", runs)
		}
		env.Advance(time.Millisecond)
		if runs != 2 {
			t.Fatalf("attempts after the first backoff: %d, want 2", runs)
		}
		env.Advance(2*time.Minute - time.Millisecond)
		if runs != 2 {
			t.Fatalf("the second retry did not wait for its doubled backoff: %d attempts", runs)
		}
		env.Advance(time.Millisecond)
		got, err := workflowtest.Result[string](env, "f-1")
		if err != nil || got != "ok on run 3" {
			t.Fatalf("result %q, %v; want ok on run 3\n%s", got, err, env.Timeline("f-1"))
		}

		runs = 0
		env.Start("flaky", 5, "f-2")
		env.Run()
		env.Advance(time.Minute)
		env.Advance(2 * time.Minute)
		got, err = workflowtest.Result[string](env, "f-2")
		if err != nil || got != "gave up after 3: downstream 503 (3)" || runs != 3 {
			t.Fatalf("result %q, %v after %d runs; want gave up after 3\n%s", got, err, runs, env.Timeline("f-2"))
		}
	})
}

// TestStepJobCancel: cancelling a run whose step waits for its step job gives the step
// up: the job is dropped unrun, the step returns ErrCancelled and compensation runs. A
// step job that is running when its run's task gives it up cannot commit.
func TestStepJobCancel(t *testing.T) {
	onBackends(t, func(t *testing.T, env *workflowtest.Env) {
		// env's worker serves only the workflows' queue: the step job waits unrun.
		ctx := env.Context()
		ran := false
		workflow.Register(env.Worker, "trip", func(ctx workflow.Context, _ struct{}) (string, error) {
			_, err := workflow.Step(ctx, "book", func(context.Context) (bool, error) { ran = true; return true, nil },
				&workflow.StepOptions{Job: paymentJob})
			if err != nil {
				_, cerr := workflow.Step(workflow.WithoutCancel(ctx), "unbook", func(context.Context) (bool, error) {
					return true, nil
				}, nil)
				return "", errors.Join(err, cerr)
			}
			return "booked", nil
		})
		env.Start("trip", struct{}{}, "t-1")
		env.Run()
		page, err := env.Store.ListJobs(ctx, headgate.JobFilter{Queue: "payments", State: headgate.StateAvailable}, headgate.Page{})
		if err != nil || len(page.Jobs) != 1 {
			t.Fatalf("available step jobs %+v, %v; want 1", page, err)
		}
		stepJob := page.Jobs[0].ID
		if err := env.Client.Cancel(ctx, "t-1", "changed plans"); err != nil {
			t.Fatal(err)
		}
		env.Run()
		if _, err := workflowtest.Result[string](env, "t-1"); !errors.Is(err, workflow.ErrCancelled) {
			t.Fatalf("result %v, want cancelled\n%s", err, env.Timeline("t-1"))
		}
		if _, err := env.Store.GetJob(ctx, stepJob); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("the given-up step job: %v, want it deleted", err)
		}
		if ran {
			t.Error("the given-up step ran")
		}
		timeline := env.Timeline("t-1")
		if !strings.Contains(timeline, "step_completed unbook#1") || strings.Contains(timeline, "step_completed book#1") {
			t.Errorf("history after the cancel:\n%s", timeline)
		}
	})
}

// TestStepJobGivenUpWhileRunning: a cancel whose task runs while the step job runs
// drops the step job; its commit is refused and nothing of the step reaches the history.
func TestStepJobGivenUpWhileRunning(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var inner []worker.Attempt
		var innerErr error
		workflow.Register(env.Worker, "trip", func(wctx workflow.Context, _ struct{}) (string, error) {
			_, err := workflow.Step(wctx, "book", func(ctx context.Context) (bool, error) {
				// While the step runs, the run is cancelled and its task runs.
				innerErr = env.Client.Cancel(ctx, "t-2", "changed plans")
				if innerErr == nil {
					inner, innerErr = env.Worker.Work(ctx, 1)
				}
				return true, nil
			}, &workflow.StepOptions{Job: paymentJob})
			return "booked", err
		})
		env.Start("trip", struct{}{}, "t-2")
		attempts := env.Run()
		if innerErr != nil || len(inner) != 1 || inner[0].Kind != workflow.TaskKind("trip") || inner[0].Err != nil {
			t.Fatalf("the task run inside the step: %+v, %v", inner, innerErr)
		}
		var stepAttempt *worker.Attempt
		for i := range attempts {
			if attempts[i].Kind == workflow.StepKind("trip") {
				stepAttempt = &attempts[i]
			}
		}
		if stepAttempt == nil {
			t.Fatalf("no step job ran: %+v", attempts)
		}
		if _, ok := errors.AsType[*headgate.LeaseRejectedError](stepAttempt.Err); !ok {
			t.Fatalf("the given-up step job's attempt: %+v, want its commit refused (LeaseRejected)", stepAttempt)
		}
		if _, err := workflowtest.Result[string](env, "t-2"); !errors.Is(err, workflow.ErrCancelled) {
			t.Fatalf("result %v, want cancelled\n%s", err, env.Timeline("t-2"))
		}
		if tl := env.Timeline("t-2"); strings.Contains(tl, "step_completed") {
			t.Errorf("the refused step reached the history:\n%s", tl)
		}
	})
}

// TestStepJobFreesTheTaskSlot: while a step job runs on its queue, the worker that
// serves the workflows' queue, with room for one job, runs other workflows: the task
// that reached the step ended.
func TestStepJobFreesTheTaskSlot(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		env := workflowtest.NewOn(t, rdb)
		ctx, cancel := context.WithTimeout(env.Context(), time.Minute)
		defer cancel()
		started, release := make(chan struct{}), make(chan struct{})
		slow := func(ctx workflow.Context, _ struct{}) (string, error) {
			return workflow.Step(ctx, "call", func(ctx context.Context) (string, error) {
				close(started)
				select {
				case <-release:
					return "slow done", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}, &workflow.StepOptions{Job: paymentJob})
		}
		quick := func(ctx workflow.Context, _ struct{}) (string, error) {
			return workflow.Step(ctx, "call", func(context.Context) (string, error) { return "quick done", nil }, nil)
		}
		ns := env.Store.Namespace()
		tasks, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "tasks", Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		steps, err := worker.New(rdb, &worker.Config{Namespace: ns, ID: "steps", Queues: []string{"payments"}, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []*worker.Worker{tasks, steps} {
			workflow.Register(w, "slow", slow)
			workflow.Register(w, "quick", quick)
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := w.Stop(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		if _, err := env.Client.Start(ctx, "slow", struct{}{}, workflow.StartOptions{ID: "slow-1"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the slow step never started")
		}
		if _, err := env.Client.Start(ctx, "quick", struct{}{}, workflow.StartOptions{ID: "quick-1"}); err != nil {
			t.Fatal(err)
		}
		got, err := workflow.Result[string](ctx, env.Client, "quick-1")
		if err != nil || got != "quick done" {
			t.Fatalf("quick result while the slow step runs: %q, %v", got, err)
		}
		close(release)
		got, err = workflow.Result[string](ctx, env.Client, "slow-1")
		if err != nil || got != "slow done" {
			t.Fatalf("slow result: %q, %v", got, err)
		}
	})
}

// TestStepJobWhilePaused: a step job enqueued before its run was paused still runs; its
// outcome is recorded and the run's next task waits for the resume.
func TestStepJobWhilePaused(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		var pauseErr error
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, _ struct{}) (string, error) {
			return workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
				_, pauseErr = env.Client.Pause(ctx, "p-1", "maintenance")
				return "ch", nil
			}, &workflow.StepOptions{Job: paymentJob})
		})
		env.Start("pay", struct{}{}, "p-1")
		env.Run()
		if pauseErr != nil {
			t.Fatal(pauseErr)
		}
		if st := env.Status("p-1"); st != headgate.WorkflowPaused {
			t.Fatalf("status %s, want paused\n%s", st, env.Timeline("p-1"))
		}
		if tl := env.Timeline("p-1"); !strings.Contains(tl, "step_completed charge#1") {
			t.Fatalf("the paused run's step result is not recorded:\n%s", tl)
		}
		if r, err := env.Client.Resume(env.Context(), "p-1", ""); err != nil || r != headgate.PauseApplied {
			t.Fatalf("resume: %s, %v", r, err)
		}
		env.Run()
		if got, err := workflowtest.Result[string](env, "p-1"); err != nil || got != "ch" {
			t.Fatalf("result %q, %v after the resume\n%s", got, err, env.Timeline("p-1"))
		}
	})
}

// TestStepJobRefusesABadRoute: a StepJob the store cannot take is Step's error, before
// anything is recorded.
func TestStepJobRefusesABadRoute(t *testing.T) {
	t.Parallel()
	env := workflowtest.New(t)
	workflow.Register(env.Worker, "pay", func(ctx workflow.Context, _ struct{}) (string, error) {
		_, err := workflow.Step(ctx, "charge", func(context.Context) (string, error) { return "ch", nil },
			&workflow.StepOptions{Job: &workflow.StepJob{Queue: "pay:ments"}})
		if iv, ok := errors.AsType[*headgate.InvalidError](err); !ok || iv.Field != "StepJob.Queue" {
			return "", fmt.Errorf("Step = %v, want an *InvalidError on StepJob.Queue", err)
		}
		return "refused", nil
	})
	env.Start("pay", struct{}{}, "p-1")
	env.Run()
	if got, err := workflowtest.Result[string](env, "p-1"); err != nil || got != "refused" {
		t.Fatalf("result %q, %v\n%s", got, err, env.Timeline("p-1"))
	}
}

// TestStepJobRefusesAQueueTooLongForTheVersion: a step job goes on the run's version of
// its queue; one that would be longer than a queue name is Step's error.
func TestStepJobRefusesAQueueTooLongForTheVersion(t *testing.T) {
	t.Parallel()
	env := workflowtest.New(t)
	version := strings.Repeat("v", headgate.MaxVersionBytes)
	long := strings.Repeat("q", headgate.MaxNameBytes-headgate.MaxVersionBytes) // with "@", one byte too many
	w := env.NewWorker("w1", version)
	workflow.Register(w, "pay", func(ctx workflow.Context, _ struct{}) (string, error) {
		_, err := workflow.Step(ctx, "charge", func(context.Context) (string, error) { return "ch", nil },
			&workflow.StepOptions{Job: &workflow.StepJob{Queue: long}})
		if iv, ok := errors.AsType[*headgate.InvalidError](err); !ok || iv.Field != "StepJob.Queue" {
			return "", fmt.Errorf("Step = %v, want an *InvalidError on StepJob.Queue", err)
		}
		return "refused", nil
	})
	if _, err := env.Client.Start(env.Context(), "pay", struct{}{}, workflow.StartOptions{ID: "p-1", Version: version}); err != nil {
		t.Fatal(err)
	}
	env.RunWith(w)
	if got, err := workflowtest.Result[string](env, "p-1"); err != nil || got != "refused" {
		t.Fatalf("result %q, %v\n%s", got, err, env.Timeline("p-1"))
	}
}

// TestStepJobSpendsItsRateClass: step jobs spend their rate class's tokens, not the
// workflows' tasks: with one token an hour, the second run's step waits for the refill
// while both runs' tasks ran.
func TestStepJobSpendsItsRateClass(t *testing.T) {
	onStepBackends(t, func(t *testing.T, env *workflowtest.Env) {
		ctx := env.Context()
		if err := env.Store.SetRateLimit(ctx, "psp", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1}); err != nil {
			t.Fatal(err)
		}
		var charged []string
		workflow.Register(env.Worker, "pay", func(ctx workflow.Context, id string) (string, error) {
			return workflow.Step(ctx, "charge", func(context.Context) (string, error) {
				charged = append(charged, id)
				return "ch_" + id, nil
			}, &workflow.StepOptions{Job: paymentJob})
		})
		env.Start("pay", "a", "pay-a")
		env.Start("pay", "b", "pay-b")
		env.Run()
		if len(charged) != 1 {
			t.Fatalf("charged %v with one token, want one run's step", charged)
		}
		waiting := "pay-b"
		if charged[0] == "b" {
			waiting = "pay-a"
		}
		if tl := env.Timeline(waiting); !strings.Contains(tl, "step_scheduled charge#1 queue=payments") {
			t.Fatalf("the waiting run's task did not run to its step:\n%s", tl)
		}
		env.Advance(time.Hour)
		for _, id := range []string{"pay-a", "pay-b"} {
			if _, err := workflowtest.Result[string](env, id); err != nil {
				t.Errorf("%s after the refill: %v", id, err)
			}
		}
	})
}

// TestStepBackoffDoublesToTheCap: the wait before a retry doubles per attempt and stays
// at StepBackoffCap however many attempts came before.
func TestStepBackoffDoublesToTheCap(t *testing.T) {
	t.Parallel()
	o := workflow.StepOptions{Backoff: time.Second}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		13: workflow.StepBackoffCap, 70: workflow.StepBackoffCap, 1000: workflow.StepBackoffCap} {
		if got := workflow.StepBackoff(o, attempt); got != want {
			t.Errorf("backoff after attempt %d = %s, want %s", attempt, got, want)
		}
	}
}

package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/worker"
)

// stepArgs name what the test handler does with a job.
type stepArgs struct {
	Do string `msgpack:"do"`
}

func (stepArgs) Kind() string { return "step" }

// doHandler returns what args.Do asks for.
func doHandler(ctx context.Context, job *worker.Job[stepArgs]) error {
	switch job.Args.Do {
	case "ok":
		return nil
	case "fail":
		return errors.New("downstream said no")
	case "skip":
		return worker.Skip("nothing to do")
	case "revoke":
		return worker.Revoke()
	case "snooze":
		return worker.Snooze(time.Minute)
	case "limited":
		return worker.RateLimited()
	case "panic":
		panic("handler bug")
	}
	return fmt.Errorf("unknown step %q", job.Args.Do)
}

// frozenAtKitEpoch freezes k's store clock at kitEpoch and returns the test's context.
func frozenAtKitEpoch(t testing.TB, k *Kit) context.Context {
	t.Helper()
	k.Freeze(kitEpoch)
	return testCtx(t)
}

// wantDrain drains k with opts and checks the summary of the attempts (DrainResult's
// String); label names the call in a failure.
func wantDrain(t testing.TB, ctx context.Context, k *Kit, opts *DrainOpts, want, label string) DrainResult {
	t.Helper()
	res := k.Drain(ctx, opts)
	if got := res.String(); got != want {
		t.Errorf("%s = %q, want %q", label, got, want)
	}
	return res
}

// kitStateOf returns the job's state, StateDeleted when it is gone.
func kitStateOf(t testing.TB, k *Kit, id string) headgate.State {
	t.Helper()
	j, err := k.Store.GetJob(testCtx(t), id)
	if errors.Is(err, headgate.ErrJobNotFound) {
		return headgate.StateDeleted
	}
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

func TestDrainOutcomes(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		Handle(k, doHandler)
		want := map[string]headgate.State{
			"ok": headgate.StateDeleted, "fail": headgate.StateRetryable, "skip": headgate.StateArchived,
			"revoke": headgate.StateDeleted, "snooze": headgate.StateScheduled, "limited": headgate.StateAvailable,
			"panic": headgate.StateRetryable,
		}
		ids := map[string]string{}
		for _, do := range []string{"limited", "ok", "fail", "skip", "revoke", "snooze", "panic"} {
			ids[do] = mustEnqueueArgs(t, k, stepArgs{Do: do}, nil).ID
		}
		// A kind no handler takes fails its attempt and is retried; a payload that does not
		// decode is parked as undecodable: as under a production worker.
		if _, err := k.Store.Enqueue(ctx, headgate.Envelope{ID: "orphan", Kind: "nobody_handles_this"},
			headgate.Envelope{ID: "garbled", Kind: "step", Payload: []byte{0xc1}}); err != nil {
			t.Fatal(err)
		}

		wantDrain(t, ctx, k, nil, "9 attempts: success=1 retry=3 skip=1 undecodable=1 revoke=1 snooze=1 rate_limited=1", "Drain")
		for do, st := range want {
			if got := kitStateOf(t, k, ids[do]); got != st {
				t.Errorf("job %q is %s after Drain, want %s", do, got, st)
			}
		}
		if got := kitStateOf(t, k, "orphan"); got != headgate.StateRetryable {
			t.Errorf("job orphan is %s after Drain, want retryable", got)
		}
		if got := kitStateOf(t, k, "garbled"); got != headgate.StateUndecodable {
			t.Errorf("job garbled is %s after Drain, want undecodable", got)
		}
		errs, err := k.Store.JobErrors(ctx, ids["panic"])
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) == 0 || !strings.Contains(errs[0].Message, "handler bug") {
			t.Errorf("the panic's job history = %q, want the panic recorded by the worker", errs)
		}

		// Nothing is left to run: another Drain runs only the rate limited job again.
		wantDrain(t, ctx, k, nil, "1 attempt: rate_limited=1", "second Drain")
	})
}

func TestDrainAdvanceToDue(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		var (
			mu  sync.Mutex
			log []string
		)
		Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
			now := k.Now()
			mu.Lock()
			log = append(log, fmt.Sprintf("%s attempt %d at +%s", job.Args.Do, job.Attempt, now.Sub(kitEpoch)))
			mu.Unlock()
			switch {
			case job.Args.Do == "flaky" && job.Attempt < 2:
				return worker.RetryAfter(10*time.Second, errors.New("not yet"))
			case job.Args.Do == "hopeless":
				return worker.RetryAfter(time.Minute, errors.New("never"))
			}
			return nil
		})
		mustEnqueueArgs(t, k, stepArgs{Do: "later"}, &rqueue.EnqueueOpts{ScheduledIn: time.Hour})
		mustEnqueueArgs(t, k, stepArgs{Do: "flaky"}, nil)
		hopeless := mustEnqueueArgs(t, k, stepArgs{Do: "hopeless"}, &rqueue.EnqueueOpts{MaxAttempts: 2})

		// Without AdvanceToDue, only what is due now runs.
		wantDrain(t, ctx, k, nil, "2 attempts: retry=2", "Drain")
		wantDrain(t, ctx, k, &DrainOpts{AdvanceToDue: true}, "4 attempts: success=2 retry=2; clock advanced 1h", "Drain with AdvanceToDue")
		wantLog := []string{
			"flaky attempt 0 at +0s", "hopeless attempt 0 at +0s",
			"flaky attempt 1 at +10s", "flaky attempt 2 at +20s", "hopeless attempt 1 at +1m0s",
			"later attempt 0 at +1h0m0s",
		}
		if !slices.Equal(log, wantLog) {
			t.Errorf("attempts:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(wantLog, "\n"))
		}
		if got := kitStateOf(t, k, hopeless.ID); got != headgate.StateArchived {
			t.Errorf("the job out of attempts is %s, want archived", got)
		}
		if got := k.Now(); !got.Equal(kitEpoch.Add(time.Hour)) {
			t.Errorf("store clock after Drain = +%s, want +1h (the last due job)", got.Sub(kitEpoch))
		}
	})
}

func TestDrainRateLimitedDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, doHandler)
	// The rate limited jobs come first in line, and stay first after each hand-back.
	var limited []string
	for range 3 {
		limited = append(limited, mustEnqueueArgs(t, k, stepArgs{Do: "limited"}, &rqueue.EnqueueOpts{Priority: 10}).ID)
	}
	for range 5 {
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, nil)
	}
	wantDrain(t, ctx, k, nil, "8 attempts: success=5 rate_limited=3", "Drain")
	for _, id := range limited {
		j, err := k.Store.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != headgate.StateAvailable || j.Attempt != 0 || j.CrashAttempt != 0 {
			t.Errorf("rate limited job is %s, attempt %d, crashes %d; want available, nothing counted", j.State, j.Attempt, j.CrashAttempt)
		}
	}
	RequireNotEnqueued(t, k.Store, Enqueued{Kind: "step", State: headgate.StateRunning})
}

func TestDrainLeavesWhatCannotBeAdmitted(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		Handle(k, doHandler)
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Queue: "paused"})
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Sticky: "another-worker"})
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Pending: true})
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, nil)
		if err := k.Store.PauseQueue(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		wantDrain(t, ctx, k, nil, "1 attempt: success=1", "Drain")
		RequireEnqueued(t, k.Store, Enqueued{Kind: "step", State: headgate.StateAvailable, Count: 2})
		RequireEnqueued(t, k.Store, Enqueued{Kind: "step", State: headgate.StatePending, Count: 1})

		// The worker a job is pinned to runs it.
		wantDrain(t, ctx, k, &DrainOpts{Worker: &worker.Config{ID: "another-worker"}}, "1 attempt: success=1", "Drain as the pinned worker")
	})
}

func TestDrainWaitsForRateTokens(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, doHandler)
	if err := k.Store.SetRateLimit(ctx, "smtp", headgate.RateLimit{Limit: 2, Window: time.Minute, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{RateClass: "smtp"})
	}
	// Two tokens now; the clock is frozen, so the others wait.
	wantDrain(t, ctx, k, nil, "2 attempts: success=2", "Drain")
	k.Advance(time.Minute)
	wantDrain(t, ctx, k, nil, "2 attempts: success=2", "Drain a window later")
}

func TestDrainServesNewQueues(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	// The signup handler enqueues the welcome mail into a queue that has no job yet.
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		_, err := k.Client.Enqueue(ctx, mailArgs{To: job.Args.Do}, &rqueue.EnqueueOpts{Queue: "mail"})
		return err
	})
	var sent []string
	Handle(k, func(ctx context.Context, job *worker.Job[mailArgs]) error {
		sent = append(sent, job.Args.To)
		return nil
	})
	mustEnqueueArgs(t, k, stepArgs{Do: "ada@example.com"}, nil)
	wantDrain(t, ctx, k, nil, "2 attempts: success=2", "Drain")
	if !slices.Equal(sent, []string{"ada@example.com"}) {
		t.Errorf("sent = %q", sent)
	}

	// Drain serves only the queues it is given.
	mustEnqueueArgs(t, k, stepArgs{Do: "bob@example.com"}, nil)
	wantDrain(t, ctx, k, &DrainOpts{Queues: []string{"default"}}, "1 attempt: success=1", "Drain of the default queue")
	RequireEnqueuedArgs(t, k.Store, mailArgs{To: "bob@example.com"}, &Match{Queue: "mail", State: headgate.StateAvailable})
}

func TestDrainRunsHandlersInARealWorker(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		calls := 0
		Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
			worker.Log(ctx, "attempt "+fmt.Sprint(job.Attempt))
			if err := worker.Step(ctx, "charge", func(context.Context) error { calls++; return nil }); err != nil {
				return err
			}
			if err := worker.WriteProgress(ctx, 1, 1, "done"); err != nil {
				return err
			}
			if job.Attempt == 0 {
				return errors.New("fail after the step")
			}
			return worker.SetResult(ctx, 1, []byte("receipt-1"))
		})
		id := mustEnqueueArgs(t, k, stepArgs{Do: "charge"}, &rqueue.EnqueueOpts{Retention: time.Hour}).ID
		wantDrain(t, ctx, k, &DrainOpts{AdvanceToDue: true}, "2 attempts: success=1 retry=1; clock advanced 1s", "Drain")
		if calls != 1 {
			t.Errorf("the step ran %d times, want once across attempts", calls)
		}
		r, err := k.Store.JobResult(ctx, id)
		if err != nil || r == nil || string(r.Bytes) != "receipt-1" {
			t.Errorf("result = %+v, %v; want receipt-1", r, err)
		}
		p, err := k.Store.JobProgress(ctx, id)
		if err != nil || p == nil || p.Message != "done" {
			t.Errorf("progress = %+v, %v; want done", p, err)
		}
		errs, err := k.Store.JobErrors(ctx, id)
		if err != nil || !strings.Contains(fmt.Sprint(errs), "attempt 0") {
			t.Errorf("history = %q, %v; want the attempt's log", errs, err)
		}
	})
}

func TestDrainJobTimeout(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		if job.Args.Do == "limited" {
			return worker.RateLimited()
		}
		<-ctx.Done()
		return ctx.Err()
	})
	limited := mustEnqueueArgs(t, k, stepArgs{Do: "limited"}, &rqueue.EnqueueOpts{Priority: 1}).ID
	slow := mustEnqueueArgs(t, k, stepArgs{Do: "slow"}, nil).ID
	wantDrain(t, ctx, k, &DrainOpts{Worker: &worker.Config{JobTimeout: 50 * time.Millisecond}}, "2 attempts: retry=1 rate_limited=1", "Drain")
	if got := kitStateOf(t, k, slow); got != headgate.StateRetryable {
		t.Errorf("the timed out job is %s, want retryable", got)
	}
	// The rate limited job runs once, and nothing counts it.
	j, err := k.Store.GetJob(ctx, limited)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != headgate.StateAvailable || j.Attempt != 0 {
		t.Errorf("the rate limited job is %s, attempt %d; want available, attempt 0", j.State, j.Attempt)
	}
}

func TestDrainFailures(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)

	k := New(t)
	f := runFake(func(ft tb) {
		k.fail = ft
		k.Drain(ctx, nil)
	})
	wantFailure(t, f, "rqueuetest: Drain: the kit has no handlers: register them with rqueuetest.Handle or rqueuetest.HandleFunc")

	k = New(t)
	k.Freeze(kitEpoch)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error { return worker.Snooze(time.Second) })
	id := mustEnqueueArgs(t, k, stepArgs{Do: "forever"}, nil).ID
	f = runFake(func(ft tb) {
		k.fail = ft
		k.Drain(ctx, &DrainOpts{AdvanceToDue: true, MaxAttempts: 5})
	})
	wantFailure(t, f, "rqueuetest: Drain: stopped after 5 attempts (DrainOpts.MaxAttempts); a handler that always snoozes",
		"The jobs that ran most:\n    id="+id+` kind="step" ran 5 times, last outcome snooze (worker: snooze for 1s)`)

	k = New(t)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		<-ctx.Done() // until the Drain gives up and its worker hands the job back
		return ctx.Err()
	})
	id = mustEnqueueArgs(t, k, stepArgs{Do: "stuck"}, nil).ID
	f = runFake(func(ft tb) {
		k.fail = ft
		k.Drain(ctx, &DrainOpts{Timeout: 100 * time.Millisecond})
	})
	wantFailure(t, f, `rqueuetest: Drain: the queues ["default"] were not drained within 100ms (DrainOpts.Timeout, or the context's deadline); worker `,
		" ran 1 attempt\n", "1 job is left available or running (handlers still running at the end were handed back):",
		"    id="+id+` kind="step" queue="default"`)
}

// A negative DrainOpts field fails the Drain naming it, before any job runs, rather than
// failing in the worker (Batch), stopping at once (MaxAttempts) or timing out (Timeout).
func TestDrainRefusesNegativeOpts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	k := New(t)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error { return nil })
	mustEnqueueArgs(t, k, stepArgs{Do: "once"}, nil)
	for _, c := range []struct {
		opts DrainOpts
		want string
	}{
		{DrainOpts{Batch: -1}, "rqueuetest: Drain: DrainOpts.Batch is negative (-1): leave it 0 for the default"},
		{DrainOpts{MaxAttempts: -2}, "rqueuetest: Drain: DrainOpts.MaxAttempts is negative (-2): leave it 0 for the default"},
		{DrainOpts{Timeout: -time.Second}, "rqueuetest: Drain: DrainOpts.Timeout is negative (-1s): leave it 0 for the default"},
	} {
		f := runFake(func(ft tb) {
			k.fail = ft
			k.Drain(ctx, &c.opts)
		})
		wantFailure(t, f, c.want)
	}
	k.fail = t
	if r := k.Drain(ctx, nil); r.Attempts != 1 {
		t.Errorf("the refused Drains ran jobs: a Drain after them ran %d attempts, want 1", r.Attempts)
	}
}

// A handler runs on the goroutine that called Drain: t.FailNow (runtime.Goexit) in it
// stops the test's goroutine, as in any other code of the test, and the round's jobs
// are acked on the way out.
func TestDrainHandlerCallsFailNow(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		if job.Args.Do == "fatal" {
			runtime.Goexit() // what t.FailNow does
		}
		return nil
	})
	ok := mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Priority: 2}).ID
	fatal := mustEnqueueArgs(t, k, stepArgs{Do: "fatal"}, &rqueue.EnqueueOpts{Priority: 1}).ID
	later := mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, nil).ID
	exited := make(chan bool)
	go func() { // the test's goroutine, as far as the handler can tell
		returned := false
		defer func() { exited <- returned }()
		k.Drain(ctx, nil)
		returned = true
	}()
	select {
	case returned := <-exited:
		if returned {
			t.Fatal("Drain returned; want its goroutine ended by the handler")
		}
	case <-ctx.Done():
		t.Fatal("Drain neither returned nor ended its goroutine")
	}
	for id, want := range map[string]headgate.State{ok: headgate.StateDeleted, fatal: headgate.StateRetryable, later: headgate.StateAvailable} {
		if got := kitStateOf(t, k, id); got != want {
			t.Errorf("job %s is %s, want %s", id, got, want)
		}
	}
	errs, err := k.Store.JobErrors(ctx, fatal)
	if err != nil || len(errs) == 0 || !strings.Contains(errs[0].Message, "runtime.Goexit") {
		t.Errorf("history of the job whose handler exited = %q, %v; want the Goexit recorded", errs, err)
	}
}

// workerGoroutines counts the goroutines running the worker package's code.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "headgate/headgate/worker.") {
			count++
		}
	}
	return count
}

// Drain runs jobs on its caller's goroutine: no goroutine of the worker package outlives
// it. The test is not parallel: it counts the goroutines of the process.
func TestDrainStopsItsWorkers(t *testing.T) {
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, doHandler)
	for _, do := range []string{"ok", "fail", "limited", "snooze"} {
		mustEnqueueArgs(t, k, stepArgs{Do: do}, nil)
	}
	k.Drain(ctx, &DrainOpts{Worker: &worker.Config{JobTimeout: time.Minute}})
	if n := workerGoroutines(); n > 0 {
		t.Errorf("%d worker goroutines still run after Drain returned", n)
	}
}

func TestDrainRateLimitedRounds(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		var ran []string
		Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
			ran = append(ran, job.Args.Do)
			return doHandler(ctx, job)
		})
		mustEnqueueArgs(t, k, stepArgs{Do: "limited"}, &rqueue.EnqueueOpts{Priority: 10})
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Priority: 2})
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Priority: 1})

		// One job a round: the hand-back comes first in line again and takes a place of
		// its own, so each round also runs the next job.
		wantDrain(t, ctx, k, &DrainOpts{Batch: 1}, "5 attempts: success=2 rate_limited=3", "Drain with Batch 1")
		if want := []string{"limited", "limited", "ok", "limited", "ok"}; !slices.Equal(ran, want) {
			t.Errorf("ran %q, want %q", ran, want)
		}

		// A job that cannot be admitted is available too: Drain cannot tell it from new
		// work, so it runs one more round, which hands the rate limited job back again.
		ran = nil
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, nil)
		mustEnqueueArgs(t, k, stepArgs{Do: "ok"}, &rqueue.EnqueueOpts{Sticky: "another-worker"})
		wantDrain(t, ctx, k, nil, "3 attempts: success=1 rate_limited=2", "Drain")
		if want := []string{"limited", "ok", "limited"}; !slices.Equal(ran, want) {
			t.Errorf("ran %q, want %q", ran, want)
		}
	})
}

func TestDrainLeaseLost(t *testing.T) {
	t.Parallel()
	k := New(t)
	ctx := frozenAtKitEpoch(t, k)
	Handle(k, func(ctx context.Context, job *worker.Job[stepArgs]) error {
		return k.Store.Cancel(ctx, job.ID) // an operator cancels the job while it runs
	})
	id := mustEnqueueArgs(t, k, stepArgs{}, nil).ID
	wantDrain(t, ctx, k, nil, "1 attempt: lease_lost=1", "Drain")
	if got := kitStateOf(t, k, id); got != headgate.StateCancelled {
		t.Errorf("job is %s, want cancelled", got)
	}
}

func TestDrainWorker(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := frozenAtKitEpoch(t, k)
		// The worker under test, as the program builds it: its own queues and handlers.
		w, err := worker.New(k.Store.Client(), &worker.Config{Namespace: k.Namespace(), Queues: []string{"mail"},
			Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		var sent []string
		worker.Handle(w, func(ctx context.Context, job *worker.Job[mailArgs]) error {
			if job.Attempt == 0 && job.Args.Subject == "flaky" {
				return errors.New("mail server down")
			}
			sent = append(sent, job.Args.To)
			return nil
		})
		mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com"}, &rqueue.EnqueueOpts{Queue: "mail"})
		mustEnqueueArgs(t, k, mailArgs{To: "bob@example.com", Subject: "flaky"}, &rqueue.EnqueueOpts{Queue: "mail"})
		mustEnqueueArgs(t, k, mailArgs{To: "eve@example.com"}, &rqueue.EnqueueOpts{Queue: "mail", ScheduledIn: time.Hour})
		mustEnqueueArgs(t, k, mailArgs{To: "not served"}, nil)

		res := DrainWorker(ctx, t, w, &DrainOpts{AdvanceToDue: true})
		if got, want := res.String(), "4 attempts: success=3 retry=1; clock advanced 1h"; got != want {
			t.Errorf("DrainWorker = %q, want %q", got, want)
		}
		if want := []string{"ada@example.com", "bob@example.com", "eve@example.com"}; !slices.Equal(sent, want) {
			t.Errorf("sent %q, want %q", sent, want)
		}
		RequireEnqueuedArgs(t, k.Store, mailArgs{To: "not served"}, &Match{Queue: "default", State: headgate.StateAvailable})
	})
}

func TestDrainWorkerFailures(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	k := New(t)
	w := k.NewWorker(nil)
	f := runFake(func(ft tb) { drainWorker(ctx, ft, w, &DrainOpts{Queues: []string{"default"}}) })
	wantFailure(t, f, "rqueuetest: DrainWorker: DrainOpts.Queues and DrainOpts.Worker configure the worker Kit.Drain builds; "+
		"DrainWorker runs worker "+w.ID()+" as it is: leave them nil")

	mustEnqueueArgs(t, k, mailArgs{}, nil)
	f = runFake(func(ft tb) { drainWorker(ctx, ft, w, nil) })
	wantFailure(t, f, "rqueuetest: Drain: worker: no handlers registered")

	worker.Handle(w, func(context.Context, *worker.Job[mailArgs]) error { return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueueArgs(t, k, mailArgs{}, &rqueue.EnqueueOpts{Queue: "elsewhere"}) // not the started worker's to take
	f = runFake(func(ft tb) { drainWorker(ctx, ft, w, nil) })
	wantFailure(t, f, "rqueuetest: Drain: worker "+w.ID()+" was started: Drain runs jobs with Worker.Work, which takes a worker that is never started")
}

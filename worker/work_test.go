package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

// work calls Work and fails the test on its error.
func (b *testBundle) work(n int) []worker.Attempt {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	attempts, err := b.worker.Work(ctx, n)
	mustOK(b.t, err)
	return attempts
}

// promote makes the jobs due at the store clock available, as the promote duty does.
func (b *testBundle) promote() {
	b.t.Helper()
	_, _, err := b.store.PromoteDue(context.Background(), 100)
	mustOK(b.t, err)
}

// doArgs name what the Work tests' handler does.
type doArgs struct {
	Do string `msgpack:"do"`
}

func (doArgs) Kind() string { return "do" }

func TestWorkOutcomes(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[doArgs]) error {
			worker.Log(ctx, "running "+job.Args.Do)
			switch job.Args.Do {
			case "ok":
				return worker.SetResult(ctx, 1, []byte("done"))
			case "fail":
				return errors.New("downstream said no")
			case "snooze":
				return worker.Snooze(time.Minute)
			case "panic":
				panic("handler bug")
			case "limited":
				return worker.RateLimited()
			case "revoke":
				return worker.Revoke()
			}
			return errors.New("unknown action " + job.Args.Do)
		})
		// Admitted in id order: one queue, one partition, one priority, one time.
		b.enqueue("a-ok", doArgs{Do: "ok"}, func(e *headgate.Envelope) { e.Retention = time.Hour })
		b.enqueue("b-fail", doArgs{Do: "fail"}, nil)
		b.enqueue("c-snooze", doArgs{Do: "snooze"}, nil)
		b.enqueue("d-panic", doArgs{Do: "panic"}, nil)
		b.enqueueRaw(headgate.Envelope{ID: "e-unknown-kind", Kind: "mystery", Payload: []byte{0x80}}, nil)
		b.enqueueRaw(headgate.Envelope{ID: "f-bad-payload", Kind: "do", Payload: []byte{0xc1}}, nil)
		b.enqueue("g-limited", doArgs{Do: "limited"}, nil)
		b.enqueue("h-revoke", doArgs{Do: "revoke"}, nil)

		attempts := b.work(100)
		want := []struct {
			id      string
			outcome headgate.Outcome
			state   headgate.State
			err     string // a prefix of Err's message; "" for none
		}{
			{"a-ok", headgate.OutcomeSuccess, headgate.StateCompleted, ""},
			{"b-fail", headgate.OutcomeRetry, headgate.StateRetryable, "downstream said no"},
			{"c-snooze", headgate.OutcomeSnooze, headgate.StateScheduled, "worker: snooze for 1m0s"},
			{"d-panic", headgate.OutcomeRetry, headgate.StateRetryable, "panic: handler bug\n\ngoroutine "},
			{"e-unknown-kind", headgate.OutcomeRetry, headgate.StateRetryable, `no handler for kind "mystery" on worker `},
			{"f-bad-payload", headgate.OutcomeUndecodable, headgate.StateUndecodable, `decode args for kind "do"`},
			{"g-limited", headgate.OutcomeRateLimited, headgate.StateAvailable, "worker: rate limited"},
			{"h-revoke", headgate.OutcomeRevoke, headgate.StateDeleted, "worker: revoke"},
		}
		if len(attempts) != len(want) {
			t.Fatalf("Work ran %d attempts, want %d: %+v", len(attempts), len(want), attempts)
		}
		for i, w := range want {
			a := attempts[i]
			if a.JobID != w.id || a.Outcome != w.outcome || a.State != w.state || a.AckErr != nil {
				t.Errorf("attempt %d = %s %s → %s (ack error %v), want %s %s → %s", i,
					a.JobID, a.Outcome, a.State, a.AckErr, w.id, w.outcome, w.state)
			}
			switch {
			case w.err == "" && a.Err != nil:
				t.Errorf("%s: Err = %v, want nil", w.id, a.Err)
			case w.err != "" && (a.Err == nil || !strings.HasPrefix(a.Err.Error(), w.err)):
				t.Errorf("%s: Err = %v, want %q…", w.id, a.Err, w.err)
			}
			if j, err := b.store.GetJob(context.Background(), w.id); w.state != headgate.StateDeleted && (err != nil || j.State != w.state) {
				t.Errorf("%s: stored job = %+v, %v; want %s", w.id, j, err, w.state)
			}
		}
		if a := attempts[1]; a.Kind != "do" || attempts[4].Kind != "mystery" {
			t.Errorf("kinds = %q, %q; want do, mystery", a.Kind, attempts[4].Kind)
		}
		if r, err := b.store.JobResult(context.Background(), "a-ok"); err != nil || r == nil || string(r.Bytes) != "done" {
			t.Errorf("result = %+v, %v; want done", r, err)
		}
		if h := b.errorHistory("b-fail"); !strings.Contains(h, "running fail") || !strings.Contains(h, "downstream said no") {
			t.Errorf("history %q lacks the attempt's log or error", h)
		}
		if h := b.errorHistory("d-panic"); !strings.Contains(h, "panic: handler bug") || !strings.Contains(h, "work_test.go") {
			t.Errorf("history %q lacks the panic and its stack", h)
		}
		if n := worker.Goroutines(b.worker); n != 0 {
			t.Errorf("%d worker goroutines after Work", n)
		}

		// The snoozed and retried jobs (the unknown kind too) run when due; the rate limited
		// one at once.
		b.advance(time.Minute)
		b.promote()
		var ids []string
		for _, a := range b.work(100) {
			ids = append(ids, a.JobID+":"+a.Outcome.String())
		}
		slices.Sort(ids)
		if want := []string{"b-fail:retry", "c-snooze:snooze", "d-panic:retry", "e-unknown-kind:retry", "g-limited:rate_limited"}; !slices.Equal(ids, want) {
			t.Errorf("second Work = %q, want %q", ids, want)
		}
	})
}

func TestWorkLimit(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		var ran []string
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			ran = append(ran, job.ID)
			return nil
		})
		for i := range 5 {
			b.enqueue(jobID(i), testArgs{N: i}, nil)
		}
		ids := func(as []worker.Attempt) []string {
			var out []string
			for _, a := range as {
				out = append(out, a.JobID)
			}
			return out
		}
		if got, want := ids(b.work(2)), []string{jobID(0), jobID(1)}; !slices.Equal(got, want) {
			t.Errorf("Work(2) ran %q, want %q", got, want)
		}
		if got, want := ids(b.work(10)), []string{jobID(2), jobID(3), jobID(4)}; !slices.Equal(got, want) {
			t.Errorf("Work(10) ran %q, want %q", got, want)
		}
		if got := b.work(1); len(got) != 0 {
			t.Errorf("Work on an empty queue ran %+v", got)
		}
		if want := []string{jobID(0), jobID(1), jobID(2), jobID(3), jobID(4)}; !slices.Equal(ran, want) {
			t.Errorf("handlers ran %q, want %q: in admission order, one at a time", ran, want)
		}
	})
}

func TestWorkStepResumes(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		charged := 0
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			if err := worker.Step(ctx, "charge", func(context.Context) error { charged++; return nil }); err != nil {
				return err
			}
			if err := worker.WriteProgress(ctx, 1, 2, "charged"); err != nil {
				return err
			}
			if err := worker.WriteOutput(ctx, 1, []byte("receipt")); err != nil {
				return err
			}
			if job.Attempt == 0 {
				return errors.New("mail server down")
			}
			return worker.Step(ctx, "mail", func(context.Context) error { return nil })
		})
		b.enqueue("j1", testArgs{}, func(e *headgate.Envelope) { e.Retention = time.Hour })
		if a := b.work(1); len(a) != 1 || a[0].Outcome != headgate.OutcomeRetry || a[0].State != headgate.StateRetryable {
			t.Fatalf("first Work = %+v, want a retry", a)
		}
		if j := b.job("j1"); !slices.Equal(j.Checkpoint.Done, []string{"charge"}) {
			t.Errorf("checkpoint after the first attempt = %+v, want charge done", j.Checkpoint)
		}
		if p, err := b.store.JobProgress(context.Background(), "j1"); err != nil || p == nil || p.Message != "charged" {
			t.Errorf("progress = %+v, %v", p, err)
		}
		if o, err := b.store.JobOutput(context.Background(), "j1"); err != nil || o == nil || string(o.Bytes) != "receipt" {
			t.Errorf("output = %+v, %v", o, err)
		}
		if a := b.work(1); len(a) != 0 {
			t.Fatalf("Work ran %+v before the retry was due", a)
		}
		b.advance(headgate.RetryBaseDefault)
		b.promote()
		if a := b.work(1); len(a) != 1 || a[0].Outcome != headgate.OutcomeSuccess || a[0].State != headgate.StateCompleted {
			t.Fatalf("second Work = %+v, want a success", a)
		}
		if charged != 1 {
			t.Errorf("the step ran %d times, want once across attempts", charged)
		}
	})
}

func TestWorkJobTimeout(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, func(c *worker.Config) { c.JobTimeout = 5 * time.Millisecond })
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), worker.ErrJobTimeout) {
				t.Errorf("cause = %v, want ErrJobTimeout", context.Cause(ctx))
			}
			return ctx.Err()
		})
		b.enqueue("j1", testArgs{}, nil)
		a := b.work(1)
		if len(a) != 1 || a[0].Outcome != headgate.OutcomeRetry || !errors.Is(a[0].Err, context.DeadlineExceeded) {
			t.Fatalf("Work = %+v, want a retry after the timeout", a)
		}
		if h := b.errorHistory("j1"); !strings.Contains(h, "timeout after 5ms") {
			t.Errorf("history %q lacks the timeout", h)
		}
	})
}

func TestWorkContextEnds(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		var cancel context.CancelFunc
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			cancel() // as a test's deadline would, while the handler runs
			if job.Args.Name == "finishes" {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		})
		for i, name := range []string{"gives up", "not run", "finishes", "not run"} {
			b.enqueue(jobID(i), testArgs{Name: name}, nil)
		}
		run := func(n int) ([]worker.Attempt, error) {
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			return b.worker.Work(ctx, n)
		}

		// A handler that fails once the context ended is handed back, and so is the job
		// not run yet: available again, nothing counted.
		attempts, err := run(2)
		if !errors.Is(err, context.Canceled) || len(attempts) != 2 {
			t.Fatalf("Work = %+v, %v; want 2 attempts and context.Canceled", attempts, err)
		}
		for i, a := range attempts {
			if a.Outcome != headgate.OutcomeHandBack || a.State != headgate.StateAvailable || !errors.Is(a.Err, context.Canceled) {
				t.Errorf("attempt %d = %+v, want handed back with context.Canceled", i, a)
			}
			if j := b.job(a.JobID); j.Attempt != 0 || j.CrashAttempt != 0 {
				t.Errorf("%s: attempt %d, crashes %d; want nothing counted", a.JobID, j.Attempt, j.CrashAttempt)
			}
		}

		// A handler that returns nil once the context ended is a success.
		b.enqueue("first", testArgs{Name: "finishes"}, func(e *headgate.Envelope) { e.Priority = 1 })
		attempts, err = run(2)
		if !errors.Is(err, context.Canceled) || len(attempts) != 2 {
			t.Fatalf("Work = %+v, %v; want 2 attempts and context.Canceled", attempts, err)
		}
		if a := attempts[0]; a.JobID != "first" || a.Outcome != headgate.OutcomeSuccess || a.Err != nil {
			t.Errorf("first attempt = %+v, want a success", a)
		}
		if a := attempts[1]; a.Outcome != headgate.OutcomeHandBack || a.State != headgate.StateAvailable {
			t.Errorf("second attempt = %+v, want handed back", a)
		}

		// An ended context admits nothing.
		ctx, cancelNow := context.WithCancel(context.Background())
		cancelNow()
		if attempts, err := b.worker.Work(ctx, 1); !errors.Is(err, context.Canceled) || len(attempts) != 0 {
			t.Errorf("Work with an ended context = %+v, %v; want nothing and context.Canceled", attempts, err)
		}
	})
}

func TestWorkLeaseRejected(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			if job.ID == "cancelled" {
				return b.store.Cancel(context.Background(), job.ID) // an operator, meanwhile
			}
			return nil
		})
		b.enqueue("cancelled", testArgs{}, nil)
		b.enqueue("other", testArgs{}, nil)
		a := b.work(2)
		var rejected *headgate.LeaseRejectedError
		if len(a) != 2 || !errors.As(a[0].AckErr, &rejected) || rejected.JobID != "cancelled" || a[0].State != "" {
			t.Fatalf("Work = %+v, want the first ack rejected", a)
		}
		if a[1].AckErr != nil || a[1].State != headgate.StateDeleted {
			t.Errorf("second attempt = %+v, want a success: one rejection holds up no other ack", a[1])
		}
		if j := b.job("cancelled"); j.State != headgate.StateCancelled {
			t.Errorf("state = %s, want cancelled", j.State)
		}
	})
}

// A handler that calls runtime.Goexit, as t.FailNow does, ends the goroutine that
// called Work; the batch is acked on the way out.
func TestWorkGoexit(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			if job.ID == jobID(1) {
				runtime.Goexit()
			}
			return nil
		})
		for i := range 3 {
			b.enqueue(jobID(i), testArgs{}, nil)
		}
		exited := make(chan bool)
		go func() {
			returned := false
			defer func() { exited <- returned }()
			_, _ = b.worker.Work(context.Background(), 3)
			returned = true
		}()
		if recv(t, exited, "the Work goroutine to end") {
			t.Fatal("Work returned; want its goroutine ended by the handler")
		}
		if j, err := b.store.GetJob(context.Background(), jobID(0)); !errors.Is(err, headgate.ErrJobNotFound) {
			t.Errorf("the job before the Goexit = %+v, %v; want it deleted (a success)", j, err)
		}
		j := b.job(jobID(1))
		if h := b.errorHistory(jobID(1)); j.State != headgate.StateRetryable || !strings.Contains(h, "runtime.Goexit") {
			t.Errorf("the job whose handler exited is %s with history %q; want retryable, the Goexit recorded", j.State, h)
		}
		if j := b.job(jobID(2)); j.State != headgate.StateAvailable || j.Attempt != 0 {
			t.Errorf("the job after it is %s, attempt %d; want handed back", j.State, j.Attempt)
		}
	})
}

func TestWorkRefuses(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		ctx := context.Background()
		if _, err := b.worker.Work(ctx, 1); err == nil || !strings.Contains(err.Error(), "no handlers registered") {
			t.Errorf("Work without handlers = %v, want an error saying there are none", err)
		}
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error { return nil })
		var inv *headgate.InvalidError
		if _, err := b.worker.Work(ctx, 0); !errors.As(err, &inv) || inv.Field != "n" {
			t.Errorf("Work(0) = %v, want an InvalidError on n", err)
		}
		b.start()
		if _, err := b.worker.Work(ctx, 1); !errors.Is(err, worker.ErrAlreadyStarted) {
			t.Errorf("Work on a started worker = %v, want ErrAlreadyStarted", err)
		}
	})
}

// Work runs what is available now, synchronously: a command that drains a queue once,
// or a test that must not wait for a started worker.
func ExampleWorker_Work() {
	ctx := context.Background()
	rdb, stop := exampleRedis()
	defer stop()

	w, err := worker.New(rdb, &worker.Config{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[EmailArgs]) error {
		if job.Args.To == "" {
			return worker.Skip("no address")
		}
		return nil
	})
	for i, to := range []string{"ada@example.com", ""} {
		payload, err := msgpack.Marshal(EmailArgs{To: to, Subject: "Welcome"})
		if err != nil {
			log.Fatal(err)
		}
		id := fmt.Sprintf("welcome-%d", i+1)
		if _, err := w.Store().Enqueue(ctx, headgate.Envelope{ID: id, Kind: "email", Payload: payload}); err != nil {
			log.Fatal(err)
		}
	}

	attempts, err := w.Work(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range attempts {
		fmt.Println(a.JobID, a.Outcome, a.State)
	}
	// Output:
	// welcome-1 success deleted
	// welcome-2 skip archived
}

package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// outcomeRun is one run of a handler: the job it got and why its context ended (nil
// while it was not cancelled).
type outcomeRun struct {
	job   *worker.Job[testArgs]
	cause error
}

// outcomeCase is one way a handler ends and what the store makes of the job's first run.
type outcomeCase struct {
	name    string
	config  func(*worker.Config)
	args    testArgs
	mod     func(*headgate.Envelope)
	handle  func(ctx context.Context, job *worker.Job[testArgs]) error
	outcome headgate.Outcome
	state   headgate.State
	history []string // in the job's error history after the first ack
	// then checks what follows the first ack: first is the first run.
	then func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun)
}

var outcomeCases = []outcomeCase{
	{
		name: "Success",
		args: testArgs{Name: "alice", N: 7},
		mod: func(e *headgate.Envelope) {
			e.Retention = time.Hour
			e.PartitionKey = "tenant-1"
		},
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			worker.Log(ctx, "hello from "+job.Args.Name)
			return worker.SetResult(ctx, 2, []byte("result of "+job.Args.Name))
		},
		outcome: headgate.OutcomeSuccess, state: headgate.StateCompleted,
		history: []string{"hello from alice"},
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			job := first.job
			if job.Args != (testArgs{Name: "alice", N: 7}) || job.ID != "j1" || job.Kind != "test" ||
				job.Queue != "default" || job.Partition != "tenant-1" || job.Attempt != 0 || job.Fence != 1 {
				t.Errorf("handler got %+v", job)
			}
			res, err := b.store.JobResult(context.Background(), "j1")
			mustOK(t, err)
			if res == nil || res.SchemaVersion != 2 || string(res.Bytes) != "result of alice" {
				t.Errorf("result = %+v", res)
			}
		},
	},
	{
		name: "RetryThenSuccess",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			if job.Attempt == 0 {
				return errors.New("boom")
			}
			return nil
		},
		outcome: headgate.OutcomeRetry, state: headgate.StateRetryable,
		history: []string{"boom"},
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if n := first.job.Attempt; n != 0 {
				t.Fatalf("first attempt has Attempt %d", n)
			}
			j := b.job("j1")
			if want := epoch.Add(headgate.RetryBaseDefault); !j.ScheduledAt.Equal(want) || j.Attempt != 1 {
				t.Errorf("retryable job: scheduled %s attempt %d, want %s and 1", j.ScheduledAt, j.Attempt, want)
			}
			b.advance(headgate.RetryBaseDefault)
			if n := recv(t, runs, "second attempt").job.Attempt; n != 1 {
				t.Fatalf("second attempt has Attempt %d", n)
			}
			if a := b.waitAck("j1"); a.Err != nil || a.Outcome != headgate.OutcomeSuccess {
				t.Errorf("ack = %+v, want success", a)
			}
		},
	},
	{
		name: "RetryAfter",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			return worker.RetryAfter(42*time.Second, errors.New("downstream busy"))
		},
		outcome: headgate.OutcomeRetry, state: headgate.StateRetryable,
		history: []string{"downstream busy"},
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if j := b.job("j1"); !j.ScheduledAt.Equal(epoch.Add(42*time.Second)) || j.Attempt != 1 {
				t.Errorf("scheduled %s attempt %d, want now+42s and 1", j.ScheduledAt, j.Attempt)
			}
		},
	},
	{
		name: "Snooze",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			if job.Fence == 1 {
				return worker.Snooze(time.Minute)
			}
			return nil
		},
		outcome: headgate.OutcomeSnooze, state: headgate.StateScheduled,
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if j := b.job("j1"); !j.ScheduledAt.Equal(epoch.Add(time.Minute)) || j.Attempt != 0 {
				t.Errorf("snoozed job: scheduled %s attempt %d, want now+1m and 0", j.ScheduledAt, j.Attempt)
			}
			b.advance(time.Minute)
			if job := recv(t, runs, "run after the snooze").job; job.Attempt != 0 || job.Fence != 2 {
				t.Errorf("second run: attempt %d fence %d, want 0 and 2", job.Attempt, job.Fence)
			}
			if a := b.waitAck("j1"); a.Err != nil || a.Outcome != headgate.OutcomeSuccess {
				t.Errorf("ack = %+v, want success", a)
			}
		},
	},
	{
		name: "Skip",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			return worker.Skip("customer deleted")
		},
		outcome: headgate.OutcomeSkip, state: headgate.StateArchived,
		history: []string{"customer deleted"},
	},
	{
		name: "Revoke",
		mod:  func(e *headgate.Envelope) { e.Retention = time.Hour },
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			return worker.Revoke()
		},
		outcome: headgate.OutcomeRevoke, state: headgate.StateDeleted,
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if _, err := b.store.GetJob(context.Background(), "j1"); !errors.Is(err, headgate.ErrJobNotFound) {
				t.Errorf("GetJob after revoke = %v, want ErrJobNotFound", err)
			}
		},
	},
	{
		name: "RateLimited",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			if job.Fence == 1 {
				return worker.RateLimited()
			}
			return nil
		},
		// Available again at once: it runs again without the clock moving.
		outcome: headgate.OutcomeRateLimited, state: headgate.StateAvailable,
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if job := recv(t, runs, "second run").job; job.Attempt != 0 || job.CrashAttempt != 0 {
				t.Errorf("second run: attempt %d crash %d, want 0 and 0", job.Attempt, job.CrashAttempt)
			}
		},
	},
	{
		name: "Panic",
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			panicky()
			return nil
		},
		outcome: headgate.OutcomeRetry, state: headgate.StateRetryable,
		history: []string{"panic: the handler fell over", "goroutine", "panicky"},
	},
	{
		name:   "Timeout",
		config: func(c *worker.Config) { c.JobTimeout = 20 * time.Millisecond },
		handle: func(ctx context.Context, job *worker.Job[testArgs]) error {
			<-ctx.Done() // the handler runs until the worker cancels it
			return ctx.Err()
		},
		outcome: headgate.OutcomeRetry, state: headgate.StateRetryable,
		history: []string{"timeout after 20ms"},
		then: func(t *testing.T, b *testBundle, first outcomeRun, runs <-chan outcomeRun) {
			if !errors.Is(first.cause, worker.ErrJobTimeout) {
				t.Errorf("cause = %v, want ErrJobTimeout", first.cause)
			}
		},
	},
}

// TestOutcomes runs a job whose handler ends in each way of outcomeCases and checks the
// ack, the job's state and its error history, then what the case checks next.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range outcomeCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
				b := setup(t, rdb, c.config)
				runs := make(chan outcomeRun, 4)
				worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
					// Deferred, so that a run that panics is reported too.
					defer func() { runs <- outcomeRun{job: job, cause: context.Cause(ctx)} }()
					return c.handle(ctx, job)
				})
				b.start()
				b.enqueue("j1", c.args, c.mod)
				first := recv(t, runs, "the handler to run")
				if a := b.waitAck("j1"); a.Err != nil || a.Outcome != c.outcome || a.State != c.state {
					t.Fatalf("ack = %+v, want %s → %s", a, c.outcome, c.state)
				}
				h := b.errorHistory("j1")
				for _, want := range c.history {
					if !strings.Contains(h, want) {
						t.Errorf("history lacks %q:\n%s", want, h)
					}
				}
				if c.then != nil {
					c.then(t, b, first, runs)
				}
			})
		})
	}
}

func panicky() { panic("the handler fell over") }

func TestUndecodable(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		logs := newLogCapture()
		b := setup(t, rdb, func(c *worker.Config) { c.Logger = logs.logger() })
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			t.Errorf("handler called for job %q", job.ID)
			return nil
		})
		b.start()
		b.enqueueRaw(headgate.Envelope{ID: "bad-payload", Kind: "test", Payload: []byte{0xc1}, PartitionKey: "t1"}, nil)
		if a := b.waitAck("bad-payload"); a.Outcome != headgate.OutcomeUndecodable || a.State != headgate.StateUndecodable {
			t.Errorf("ack = %+v, want undecodable", a)
		}
		if h := b.errorHistory("bad-payload"); !strings.Contains(h, `decode args for kind "test"`) {
			t.Errorf("history %q lacks the decode error", h)
		}
		ls := logs.wait(t, 1, slog.LevelError, "does not decode")
		if len(ls) != 1 {
			t.Errorf("%d ERROR lines for one undecodable job, want 1:%s", len(ls), logs.all())
		}
		checkJobFields(t, ls[0], map[string]string{"job_id": "bad-payload", "kind": "test", "queue": "default",
			"partition": "t1", "attempt": "1", "worker": b.worker.ID()})
	})
}

// A worker without a handler for a kind must not end the kind's jobs: another worker of
// the fleet, or the next deploy, may run them. The attempt fails like any other.
func TestUnknownKindIsRetried(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		logs := newLogCapture()
		// Every attempt's line, though the two repeat (see TestRepeatedFailuresLogOncePerInterval).
		b := setup(t, rdb, func(c *worker.Config) { c.Logger, c.LogRepeatInterval = logs.logger(), -1 })
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error { return nil })
		b.start()
		b.enqueueRaw(headgate.Envelope{ID: "card-1", Kind: "charge_card", Payload: []byte{0x80},
			PartitionKey: "acme", MaxAttempts: 2}, nil)
		want := fmt.Sprintf(`no handler for kind "charge_card" on worker %s`, b.worker.ID())

		if a := b.waitAck("card-1"); a.Outcome != headgate.OutcomeRetry || a.State != headgate.StateRetryable {
			t.Fatalf("first attempt: ack = %+v, want retry → retryable", a)
		}
		j := b.job("card-1")
		if j.Attempt != 1 || !j.ScheduledAt.Equal(epoch.Add(headgate.RetryBaseDefault)) {
			t.Errorf("after the first attempt: attempt %d, scheduled %s; want 1 and now+%s",
				j.Attempt, j.ScheduledAt, headgate.RetryBaseDefault)
		}
		if h := b.errorHistory("card-1"); !strings.Contains(h, want) {
			t.Errorf("history %q lacks %q", h, want)
		}
		ls := logs.wait(t, 1, slog.LevelError, "no handler")
		checkJobFields(t, ls[0], map[string]string{"job_id": "card-1", "kind": "charge_card", "queue": "default",
			"partition": "acme", "attempt": "1", "error": want})

		b.advance(headgate.RetryBaseDefault)
		if a := b.waitAck("card-1"); a.Outcome != headgate.OutcomeRetry || a.State != headgate.StateArchived {
			t.Fatalf("second attempt: ack = %+v, want retry → archived (attempts spent)", a)
		}
		ls = logs.wait(t, 2, slog.LevelError, "no handler")
		if len(ls) != 2 {
			t.Errorf("%d ERROR lines for two attempts, want 2:%s", len(ls), logs.all())
		}
		checkJobFields(t, ls[1], map[string]string{"job_id": "card-1", "attempt": "2"})
		if n := len(logs.matching(slog.LevelWarn, "")); n != 0 {
			t.Errorf("%d WARN lines besides the ERROR ones, want none:%s", n, logs.all())
		}
	})
}

// Each failed attempt gets one log line with the job's fields: WARN for an error, ERROR
// with the stack for a panic.
func TestAttemptLogs(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		logs := newLogCapture()
		b := setup(t, rdb, func(c *worker.Config) { c.Logger = logs.logger() })
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			switch job.Args.Name {
			case "panic":
				panic("handler bug")
			case "fail":
				return errors.New("downstream said no")
			}
			return nil
		})
		b.start()
		b.enqueue("fails", testArgs{Name: "fail"}, func(e *headgate.Envelope) { e.PartitionKey = "p1" })
		b.waitAck("fails")
		b.enqueue("panics", testArgs{Name: "panic"}, func(e *headgate.Envelope) { e.Queue = "default" })
		b.waitAck("panics")
		b.enqueue("ok", testArgs{Name: "ok"}, nil)
		b.waitAck("ok")

		warn := logs.wait(t, 1, slog.LevelWarn, "failed")
		checkJobFields(t, warn[0], map[string]string{"job_id": "fails", "kind": "test", "queue": "default",
			"partition": "p1", "attempt": "1", "error": "downstream said no"})
		// The log and the job's history number the first attempt alike.
		if h := b.errorHistory("fails"); !strings.Contains(h, "(attempt 1,") {
			t.Errorf("history %q does not call the first attempt attempt 1, as its log line does", h)
		}
		perr := logs.wait(t, 1, slog.LevelError, "panicked")
		checkJobFields(t, perr[0], map[string]string{"job_id": "panics", "kind": "test", "attempt": "1", "panic": "handler bug"})
		if !strings.Contains(perr[0].Attrs["stack"], "outcome_test.go") {
			t.Errorf("panic line's stack %q does not show the handler", perr[0].Attrs["stack"])
		}
		for _, lvl := range []slog.Level{slog.LevelWarn, slog.LevelError} {
			for _, l := range logs.matching(lvl, "") {
				if l.Attrs["job_id"] == "ok" {
					t.Errorf("a successful attempt was logged at %s: %q", lvl, l.Msg)
				}
			}
		}
		if n := len(logs.matching(slog.LevelWarn, "failed")) + len(logs.matching(slog.LevelError, "panicked")); n != 2 {
			t.Errorf("%d attempt lines for two failed attempts, want 2:%s", n, logs.all())
		}
	})
}

func TestOutputAndProgress(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		written := make(chan struct{})
		release := make(chan struct{})
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			if err := worker.WriteOutput(ctx, 1, []byte("partial")); err != nil {
				return err
			}
			if err := worker.WriteProgress(ctx, 3, 10, "three of ten"); err != nil {
				return err
			}
			close(written)
			<-release
			return nil
		})
		b.start()
		b.enqueue("j1", testArgs{}, nil)
		recv(t, written, "output and progress")
		ctx := context.Background()
		out, err := b.store.JobOutput(ctx, "j1")
		mustOK(t, err)
		if out == nil || string(out.Bytes) != "partial" || out.Fence != 1 {
			t.Errorf("output = %+v", out)
		}
		p, err := b.store.JobProgress(ctx, "j1")
		mustOK(t, err)
		if p == nil || p.Current != 3 || p.Total != 10 || p.Message != "three of ten" {
			t.Errorf("progress = %+v", p)
		}
		close(release)
		b.waitAck("j1")
	})
}

func TestHelpersOutsideJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, err := range map[string]error{
		"SetResult":     worker.SetResult(ctx, 1, nil),
		"WriteOutput":   worker.WriteOutput(ctx, 1, nil),
		"WriteProgress": worker.WriteProgress(ctx, 1, 2, ""),
		"Step":          worker.Step(ctx, "s", func(context.Context) error { return nil }),
	} {
		if !errors.Is(err, worker.ErrNotInJob) {
			t.Errorf("%s outside a job = %v, want ErrNotInJob", name, err)
		}
	}
	worker.Log(ctx, "ignored") // must not panic
}

func TestManyJobs(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, func(c *worker.Config) { c.Concurrency = 16 })
		const n = 500
		seen := make(chan string, n)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			seen <- job.ID
			return nil
		})
		b.start()
		envs := make([]headgate.Envelope, n)
		for i := range envs {
			envs[i] = headgate.Envelope{ID: jobID(i), Kind: "test", Payload: []byte{0x80}}
		}
		_, err := b.store.Enqueue(context.Background(), envs...)
		mustOK(t, err)
		got := map[string]bool{}
		for range n {
			id := recv(t, seen, "jobs")
			if got[id] {
				t.Fatalf("job %s ran twice", id)
			}
			got[id] = true
		}
		for range n {
			if a := recv(t, b.acks, "acks"); a.Err != nil || a.State != headgate.StateDeleted {
				t.Fatalf("ack = %+v, want deleted", a)
			}
		}
	})
}

func TestQueuesServedInOrder(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, func(c *worker.Config) {
			c.Queues = []string{"high", "low"}
			c.Concurrency = 1
		})
		ran := make(chan string, 3)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			ran <- job.Queue + "/" + job.ID
			return nil
		})
		b.enqueue("a", testArgs{}, func(e *headgate.Envelope) { e.Queue = "low" })
		b.enqueue("b", testArgs{}, func(e *headgate.Envelope) { e.Queue = "high" })
		b.enqueue("c", testArgs{}, func(e *headgate.Envelope) { e.Queue = "elsewhere" })
		b.start()
		for _, want := range []string{"high/b", "low/a"} {
			if got := recv(t, ran, want); got != want {
				t.Errorf("ran %s, want %s", got, want)
			}
		}
		b.waitAck("a")
		if j := b.job("c"); j.State != headgate.StateAvailable {
			t.Errorf("job of a queue the worker does not serve is %s, want available", j.State)
		}
	})
}

// TestOutcomeOfSuccessAllocatesNothing: a successful attempt, the common case, must not
// pay for the errors.As targets that only a failure needs.
func TestOutcomeOfSuccessAllocatesNothing(t *testing.T) {
	var o headgate.Outcome
	allocs := testing.AllocsPerRun(100, func() { o = worker.Outcome(nil) })
	if o != headgate.OutcomeSuccess {
		t.Fatalf("outcome(nil) = %s, want success", o)
	}
	if allocs != 0 {
		t.Fatalf("outcome(nil) made %v allocations, want 0", allocs)
	}
}

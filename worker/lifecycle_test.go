package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// A reclaimed lease cancels the handler at the next renewal, with ErrLeaseLost.
func TestLeaseLostCancelsHandler(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		started, cause := b.handleUntilCancelled(returnCtxErr)
		b.start()
		b.enqueue("j1", testArgs{}, nil)
		recv(t, started, "the handler to start")
		// The lease runs out on the store clock; the reclaim duty takes the job, and the
		// next renewal (every Lease/3) finds the lease gone.
		b.advance(b.cfg.Lease + time.Millisecond)
		if err := recv(t, cause, "the handler's cancellation"); !errors.Is(err, worker.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", err)
		}
	})
}

// A worker that dies in the middle of a step loses its lease; the reclaimer of another
// worker charges the crash to that step, and the next attempt skips the steps done.
func TestKilledWorkerResumesAtStep(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		a := setup(t, rdb, nil)
		inTwo := make(chan struct{})
		worker.Handle(a.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			if err := worker.Step(ctx, "one", func(context.Context) error { return nil }); err != nil {
				return err
			}
			return worker.Step(ctx, "two", func(ctx context.Context) error {
				close(inTwo)
				<-ctx.Done()
				return ctx.Err()
			})
		})
		a.start()
		a.enqueue("j1", testArgs{}, func(e *headgate.Envelope) { e.Retention = time.Hour })
		recv(t, inTwo, "step two to start")
		worker.Kill(a.worker)
		if j := a.job("j1"); j.State != headgate.StateRunning || j.Checkpoint.InProgress != "two" ||
			!slices.Equal(j.Checkpoint.Done, []string{"one"}) {
			t.Fatalf("after the kill: state %s, checkpoint %+v; want running in step two after one", j.State, j.Checkpoint)
		}

		// The dead worker's job lease and duties run out; a second worker takes the duties,
		// reclaims the job and, once its backoff passed, runs it again.
		a.advance(a.cfg.Lease + a.cfg.DutyLease)
		cfg := a.cfg
		cfg.ID = "second"
		b := newBundle(t, a.rdb, a.store, cfg)
		var ran []string
		steps := make(chan []string, 1)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			for _, s := range []string{"one", "two", "three"} {
				if err := worker.Step(ctx, s, func(context.Context) error { ran = append(ran, s); return nil }); err != nil {
					return err
				}
			}
			steps <- ran
			return nil
		})
		b.start()
		j := b.waitState("j1", headgate.StateRetryable)
		if j.CrashAttempt != 1 || j.Attempt != 0 || j.Checkpoint.CrashesByStep["two"] != 1 {
			t.Errorf("reclaimed job: crash %d attempt %d crashes by step %v; want 1, 0, two:1",
				j.CrashAttempt, j.Attempt, j.Checkpoint.CrashesByStep)
		}
		b.advance(headgate.RetryBaseDefault)
		if got := recv(t, steps, "the second attempt"); !slices.Equal(got, []string{"two", "three"}) {
			t.Errorf("second attempt ran steps %v, want [two three]", got)
		}
		if ack := b.waitAck("j1"); ack.State != headgate.StateCompleted {
			t.Errorf("ack = %+v, want completed", ack)
		}
		if j := b.job("j1"); !slices.Equal(j.Checkpoint.Done, []string{"one", "two", "three"}) {
			t.Errorf("steps done = %v", j.Checkpoint.Done)
		}
	})
}

func TestShutdownHandsJobsBack(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		labels := make(chan string, 1) // what metrics middleware label the attempt with
		b := setup(t, rdb, func(c *worker.Config) {
			c.ShutdownTimeout = 20 * time.Millisecond
			c.Middleware = []worker.Middleware{func(next worker.HandlerFunc) worker.HandlerFunc {
				return func(ctx context.Context, c *headgate.Claim) error {
					err := next(ctx, c)
					labels <- worker.OutcomeLabel(ctx, err)
					return err
				}
			}}
		})
		started, cause := b.handleUntilCancelled(returnCtxErr)
		b.start()
		b.enqueue("j1", testArgs{}, nil)
		recv(t, started, "the handler to start")
		mustOK(t, b.stop(waitLimit))
		if err := recv(t, cause, "the handler's cancellation"); !errors.Is(err, worker.ErrShutdown) {
			t.Errorf("cause = %v, want ErrShutdown", err)
		}
		if a := b.waitAck("j1"); a.Outcome != headgate.OutcomeHandBack || a.State != headgate.StateAvailable {
			t.Errorf("ack = %+v, want hand_back → available", a)
		}
		if l := recv(t, labels, "the middleware's label"); l != headgate.OutcomeHandBack.String() {
			t.Errorf("OutcomeLabel of the handed-back attempt = %q, want %q, the outcome it was acked as", l, headgate.OutcomeHandBack)
		}
		if j := b.job("j1"); j.Attempt != 0 || j.CrashAttempt != 0 {
			t.Errorf("handed-back job: attempt %d crash %d, want 0 and 0", j.Attempt, j.CrashAttempt)
		}
	})
}

func TestShutdownWaitsForRunningJobs(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		started, release := b.handleUntilReleased()
		b.start()
		b.enqueue("j1", testArgs{}, func(e *headgate.Envelope) { e.Retention = time.Hour })
		recv(t, started, "the handler to start")
		stopped := make(chan error, 1)
		go func() { stopped <- b.stop(waitLimit) }()
		close(release)
		mustOK(t, recv(t, stopped, "Stop to return"))
		if j := b.job("j1"); j.State != headgate.StateCompleted {
			t.Errorf("state after a graceful stop = %s, want completed", j.State)
		}
		// Stopped workers admit nothing.
		b.enqueue("j2", testArgs{}, nil)
		if j := b.job("j2"); j.State != headgate.StateAvailable {
			t.Errorf("state of a job enqueued after Stop = %s, want available", j.State)
		}
	})
}

func TestRunStopsWithContext(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		got := make(chan string, 1)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			got <- job.ID
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		if b.worker.Stopped() {
			t.Error("Stopped = true before Run")
		}
		go func() { done <- b.worker.Run(ctx) }()
		b.enqueue("j1", testArgs{}, nil)
		recv(t, got, "the job to run")
		if b.worker.Stopped() {
			t.Error("Stopped = true while Run runs")
		}
		cancel()
		mustOK(t, recv(t, done, "Run to return"))
		if !b.worker.Stopped() {
			t.Error("Stopped = false after Run returned")
		}
		if n := worker.Goroutines(b.worker); n != 0 {
			t.Errorf("%d worker goroutines still running after Run returned", n)
		}
		if err := b.worker.Start(context.Background()); !errors.Is(err, worker.ErrAlreadyStarted) {
			t.Errorf("Start after Run = %v, want ErrAlreadyStarted", err)
		}
	})
}

// A job retried by a Retry outcome is promoted by the worker's promote duty, which
// sleeps until the job is due.
func TestScheduledJobRunsWhenDue(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := setup(t, rdb, nil)
		got := make(chan string, 1)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			got <- job.ID
			return nil
		})
		b.start()
		b.enqueue("later", testArgs{}, func(e *headgate.Envelope) { e.ScheduledAt = epoch.Add(time.Hour) })
		if j := b.job("later"); j.State != headgate.StateScheduled {
			t.Fatalf("state = %s, want scheduled", j.State)
		}
		b.advance(time.Hour)
		if id := recv(t, got, "the scheduled job"); id != "later" {
			t.Errorf("ran %q", id)
		}
	})
}

// A finished job whose ack fails is acked again, with backoff, once Redis answers.
func TestAckRetriedWhileRedisFails(t *testing.T) {
	t.Parallel()
	// run finishes a job while Redis fails, waits for the worker to report a failed ack,
	// lets Redis answer again and returns the ack's answer.
	run := func(t *testing.T, rdb redis.UniversalClient, fail, heal func()) ackEvent {
		logs := newLogRecorder()
		b := setup(t, rdb, func(c *worker.Config) {
			c.Lease = 30 * time.Second
			c.Logger = slog.New(logs)
		})
		started, release := b.handleUntilReleased()
		b.start()
		b.enqueue("j1", testArgs{}, func(e *headgate.Envelope) { e.Retention = time.Hour })
		recv(t, started, "the handler to start")
		fail()
		close(release)
		logs.waitLog(t, "ack failed; retrying")
		heal()
		return b.waitAck("j1")
	}
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		m := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		a := run(t, rdb,
			func() { m.SetError("LOADING Redis is loading the dataset in memory") },
			func() { m.SetError("") })
		if a.Err != nil || a.State != headgate.StateCompleted {
			t.Errorf("ack = %+v, want completed", a)
		}
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		a := run(t, srv.Client(t),
			func() { mustOK(t, srv.Stop()) },
			func() { mustOK(t, srv.Restart()) })
		// The restarted server starts empty: the job is gone, so its ack is answered
		// with a rejection rather than retried forever.
		var rejected *headgate.LeaseRejectedError
		if !errors.As(a.Err, &rejected) {
			t.Errorf("ack = %+v, want LeaseRejected (the restart lost the job)", a)
		}
	})
}

// A worker whose Redis restarts (losing its data) backs off, reconnects by itself and
// runs new jobs.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		rdb := srv.Client(t)
		ns := redistest.Namespace(t)
		store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: ns})
		mustOK(t, err)
		b := newBundle(t, rdb, store, testConfig(t, ns))
		got := make(chan string, 10)
		worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
			got <- job.ID
			return nil
		})
		b.start()
		b.enqueue("before", testArgs{}, nil)
		if id := recv(t, got, "the job before the restart"); id != "before" {
			t.Fatalf("ran %q", id)
		}
		mustOK(t, srv.Stop())
		mustOK(t, srv.Restart())
		// The enqueue may meet a connection the restart broke; go-redis retries it.
		b.enqueue("after", testArgs{}, nil)
		if id := recv(t, got, "the job after the restart"); id != "after" {
			t.Fatalf("ran %q", id)
		}
	})
}

// A stopping worker gives its duties up, so another takes them over at once rather than
// after the duty lease (an hour here, on a frozen clock: never).
func TestStopReleasesDuties(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		a := setup(t, rdb, func(c *worker.Config) { c.DutyLease = time.Hour })
		ran := make(chan string, 1)
		handler := func(ctx context.Context, job *worker.Job[testArgs]) error {
			ran <- job.ID
			return nil
		}
		worker.Handle(a.worker, handler)
		a.start()
		// A scheduled job that runs proves the first worker holds the promote duty.
		a.enqueue("first", testArgs{}, func(e *headgate.Envelope) { e.ScheduledAt = epoch.Add(time.Minute) })
		a.advance(time.Minute)
		if id := recv(t, ran, "the first scheduled job"); id != "first" {
			t.Fatalf("ran %q", id)
		}
		mustOK(t, a.stop(waitLimit))

		cfg := a.cfg
		cfg.ID = "second"
		b := newBundle(t, a.rdb, a.store, cfg)
		worker.Handle(b.worker, handler)
		b.start()
		b.enqueue("second", testArgs{}, func(e *headgate.Envelope) { e.ScheduledAt = epoch.Add(2 * time.Minute) })
		b.advance(time.Minute)
		if id := recv(t, ran, "the second scheduled job"); id != "second" {
			t.Fatalf("ran %q", id)
		}
	})
}

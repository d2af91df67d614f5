package rqueuetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
)

// SendWelcome are the args of the welcome mail job.
type SendWelcome struct {
	Email string `msgpack:"email"`
}

func (SendWelcome) Kind() string { return "send_welcome" }

// mailer stands in for the mail provider in tests.
type mailer struct{ sent []string }

// sendWelcome is the handler under test.
func sendWelcome(m *mailer) func(ctx context.Context, job *worker.Job[SendWelcome]) error {
	return func(ctx context.Context, job *worker.Job[SendWelcome]) error {
		if job.Args.Email == "" {
			return worker.Skip("no address")
		}
		m.sent = append(m.sent, job.Args.Email)
		return nil
	}
}

// signUp is the producer under test: it sends the welcome mail ten minutes after a
// sign-up.
func signUp(ctx context.Context, jobs *rqueue.Client, email string) error {
	_, err := jobs.Enqueue(ctx, SendWelcome{Email: email},
		&rqueue.EnqueueOpts{Queue: "mail", ScheduledIn: 10 * time.Minute})
	return err
}

// A handler test: enqueue jobs, Drain them through the handler, check what happened.
// It needs no Redis server: New runs on an embedded miniredis.
func Example_handler() {
	t := &testing.T{} // in a test, the test's *testing.T
	ctx := context.Background()

	kit := rqueuetest.New(t)
	m := &mailer{}
	rqueuetest.Handle(kit, sendWelcome(m))

	for _, email := range []string{"ada@example.com", ""} {
		if _, err := kit.Client.Enqueue(ctx, SendWelcome{Email: email}, nil); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println(kit.Drain(ctx, nil))
	fmt.Println(m.sent)

	// The job without an address was skipped: archived, not retried.
	rqueuetest.RequireEnqueued(t, kit.Store, rqueuetest.Enqueued{
		Kind: "send_welcome", State: headgate.StateArchived, Count: 1,
	})
	fmt.Println("failed:", t.Failed())
	// Output:
	// 2 attempts: success=1 skip=1
	// [ada@example.com]
	// failed: false
}

// A producer test: freeze the store clock, call the code that enqueues, and check the
// job it enqueued. Then let time pass and run it.
func Example_producer() {
	t := &testing.T{} // in a test, the test's *testing.T
	ctx := context.Background()

	kit := rqueuetest.New(t)
	now := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	kit.Freeze(now)

	if err := signUp(ctx, kit.Client, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	jobs := rqueuetest.RequireEnqueuedArgs(t, kit.Store, SendWelcome{Email: "ada@example.com"}, &rqueuetest.Match{
		Queue:       "mail",
		ScheduledAt: now.Add(10 * time.Minute),
		Count:       1,
	})
	fmt.Println(jobs[0].State, "until", jobs[0].ScheduledAt.UTC().Format(time.Kitchen))
	rqueuetest.RequireNotEnqueued(t, kit.Store, rqueuetest.Enqueued{Kind: "send_invoice"})

	// Nothing is due yet; AdvanceToDue steps the clock to the mail's time and runs it.
	m := &mailer{}
	rqueuetest.Handle(kit, sendWelcome(m))
	fmt.Println(kit.Drain(ctx, nil))
	fmt.Println(kit.Drain(ctx, &rqueuetest.DrainOpts{AdvanceToDue: true}))
	fmt.Println(m.sent, "at", kit.Now().Format(time.Kitchen))
	fmt.Println("failed:", t.Failed())
	// Output:
	// scheduled until 9:10AM
	// 0 attempts
	// 1 attempt: success=1; clock advanced 10m
	// [ada@example.com] at 9:10AM
	// failed: false
}

// DrainWorker runs the jobs of a worker the test built as the program builds it, with
// its own handlers and queues.
func ExampleDrainWorker() {
	t := &testing.T{} // in a test, the test's *testing.T
	ctx := context.Background()

	kit := rqueuetest.New(t)
	kit.Freeze(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC))
	w, err := worker.New(kit.Store.Client(), &worker.Config{Namespace: kit.Namespace(), Queues: []string{"mail"}})
	if err != nil {
		t.Fatal(err)
	}
	m := &mailer{}
	worker.Handle(w, sendWelcome(m)) // as the program registers it

	if err := signUp(ctx, kit.Client, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	fmt.Println(rqueuetest.DrainWorker(ctx, t, w, &rqueuetest.DrainOpts{AdvanceToDue: true}))
	fmt.Println(m.sent)
	// Output:
	// 1 attempt: success=1; clock advanced 10m
	// [ada@example.com]
}

// WorkJob runs one attempt of a job through a handler in a real worker and reports how
// the worker acked it.
func ExampleWorkJob() {
	t := &testing.T{} // in a test, the test's *testing.T
	ctx := context.Background()

	errBusy := errors.New("mail provider busy")
	busy := func(ctx context.Context, job *worker.Job[SendWelcome]) error {
		return worker.RetryAfter(time.Minute, errBusy)
	}
	r := rqueuetest.WorkJob(ctx, t, busy, SendWelcome{Email: "ada@example.com"}, nil)
	fmt.Println(r.Outcome, r.State, errors.Is(r.Err, errBusy))
	fmt.Println("attempts so far:", r.Job.Attempt)
	// Output:
	// retry retryable true
	// attempts so far: 1
}

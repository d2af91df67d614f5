package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
	"github.com/vmihailenco/msgpack/v5"
)

// Middleware of the worker wraps every kind, outside the middleware given for one kind
// at registration. The example drains the queue once with Work.
func ExampleMiddleware() {
	ctx := context.Background()
	rdb, stop := exampleRedis()
	defer stop()

	// timing stands in for a metrics or tracing middleware: it sees every attempt and
	// how it ended.
	timing := func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(ctx context.Context, c *headgate.Claim) error {
			start := time.Now()
			err := next(ctx, c)
			_ = time.Since(start) // record it, by c.Envelope.Queue and c.Envelope.Kind
			fmt.Printf("worker middleware: %s ended %s\n", c.Envelope.Kind, worker.OutcomeOf(err))
			return err
		}
	}
	audit := func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(ctx context.Context, c *headgate.Claim) error {
			fmt.Printf("email middleware: to run %s\n", c.Envelope.ID)
			return next(ctx, c)
		}
	}
	w, err := worker.New(rdb, &worker.Config{Namespace: "example", Middleware: []worker.Middleware{timing}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[EmailArgs]) error {
		fmt.Printf("handler: sending to %s\n", job.Args.To)
		return nil
	}, audit)

	payload, err := msgpack.Marshal(EmailArgs{To: "ada@example.com"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Store().Enqueue(ctx, headgate.Envelope{ID: "welcome-ada", Kind: "email", Payload: payload}); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Work(ctx, 10); err != nil {
		log.Fatal(err)
	}
	// Output:
	// email middleware: to run welcome-ada
	// handler: sending to ada@example.com
	// worker middleware: email ended success
}

// errPermanent marks errors that retrying cannot fix.
var errPermanent = errors.New("permanent")

// giveUpOnPermanent is an ErrorHandler that archives jobs whose error is permanent
// instead of retrying them, and leaves panics as they are (retried).
type giveUpOnPermanent struct{}

func (giveUpOnPermanent) HandleError(ctx context.Context, c *headgate.Claim, err error) *worker.ErrorHandlerResult {
	if errors.Is(err, errPermanent) {
		return &worker.ErrorHandlerResult{Err: worker.Skip(err.Error())}
	}
	return nil // as it is: retried after the backoff
}

func (giveUpOnPermanent) HandlePanic(ctx context.Context, c *headgate.Claim, value any, stack string) *worker.ErrorHandlerResult {
	return nil
}

// An error handler changes how failed attempts end: here a permanent error archives its
// job at once rather than spending its 25 attempts.
func ExampleErrorHandler() {
	ctx := context.Background()
	rdb, stop := exampleRedis()
	defer stop()

	w, err := worker.New(rdb, &worker.Config{Namespace: "example", ErrorHandler: giveUpOnPermanent{}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, func(ctx context.Context, job *worker.Job[EmailArgs]) error {
		if job.Args.To == "" {
			return fmt.Errorf("no address: %w", errPermanent)
		}
		return errors.New("mail server busy")
	})
	for _, to := range []string{"", "ada@example.com"} {
		payload, err := msgpack.Marshal(EmailArgs{To: to})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := w.Store().Enqueue(ctx, headgate.Envelope{ID: "to-" + to, Kind: "email", Payload: payload}); err != nil {
			log.Fatal(err)
		}
	}
	attempts, err := w.Work(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range attempts {
		fmt.Printf("%s: %s, %s\n", a.JobID, a.Outcome, a.State)
	}
	// Output:
	// to-: skip, archived
	// to-ada@example.com: retry, retryable
}

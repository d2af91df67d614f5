package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
	"github.com/redis/go-redis/v9"
)

// trail records the order in which middleware and handlers run.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	tr.steps = append(tr.steps, s)
	tr.mu.Unlock()
}

func (tr *trail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.steps...)
}

// recording is a middleware that records its name before and after the rest of the
// chain, with the outcome the rest ended in.
func recording(tr *trail, name string) worker.Middleware {
	return func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(ctx context.Context, c *headgate.Claim) error {
			tr.add(name + ">")
			err := next(ctx, c)
			tr.add("<" + name + ":" + worker.OutcomeOf(err).String())
			return err
		}
	}
}

func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	tr := &trail{}
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.Middleware = []worker.Middleware{recording(tr, "w1"), recording(tr, "w2")}
	})
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		tr.add("handler")
		return nil
	}, recording(tr, "k1"), recording(tr, "k2"))
	b.enqueue("j1", testArgs{Name: "a"}, nil)
	attempts := b.work(1)
	if len(attempts) != 1 || attempts[0].Outcome != headgate.OutcomeSuccess {
		t.Fatalf("attempts = %+v, want one success", attempts)
	}
	want := []string{"w1>", "w2>", "k1>", "k2>", "handler", "<k2:success", "<k1:success", "<w2:success", "<w1:success"}
	if got := tr.get(); !slices.Equal(got, want) {
		t.Errorf("order = %q, want %q", got, want)
	}
}

func TestMiddlewareCanChangeContextAndResult(t *testing.T) {
	t.Parallel()
	type key struct{}
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.Middleware = []worker.Middleware{func(next worker.HandlerFunc) worker.HandlerFunc {
			return func(ctx context.Context, c *headgate.Claim) error {
				err := next(context.WithValue(ctx, key{}, c.Envelope.ID), c)
				if err != nil && strings.Contains(err.Error(), "skip me") {
					return worker.Skip("middleware: " + err.Error())
				}
				return err
			}
		}}
	})
	var seen string
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		seen, _ = ctx.Value(key{}).(string)
		return errors.New("skip me")
	})
	b.enqueue("j1", testArgs{}, nil)
	attempts := b.work(1)
	if seen != "j1" {
		t.Errorf("handler saw context value %q, want the middleware's j1", seen)
	}
	if len(attempts) != 1 || attempts[0].Outcome != headgate.OutcomeSkip || attempts[0].State != headgate.StateArchived {
		t.Fatalf("attempts = %+v, want one skip, archived", attempts)
	}
}

func TestMiddlewareWrapsUnknownKindAndItsOwnPanics(t *testing.T) {
	t.Parallel()
	tr := &trail{}
	var hook countingErrorHandler
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.Middleware = []worker.Middleware{recording(tr, "w")}
		c.ErrorHandler = &hook
	})
	worker.HandleFunc(b.worker, "other", func(context.Context, *headgate.Claim) error { return nil },
		func(worker.HandlerFunc) worker.HandlerFunc {
			return func(context.Context, *headgate.Claim) error { panic("middleware bug") }
		})
	b.enqueueRaw(headgate.Envelope{ID: "unknown", Kind: "nobody"}, nil)
	b.enqueueRaw(headgate.Envelope{ID: "other", Kind: "other"}, func(e *headgate.Envelope) { e.Priority = -1 })
	attempts := b.work(2)
	if len(attempts) != 2 {
		t.Fatalf("attempts = %+v, want 2", attempts)
	}
	for _, a := range attempts {
		if a.Outcome != headgate.OutcomeRetry || a.State != headgate.StateRetryable {
			t.Errorf("attempt %+v, want a retry", a)
		}
	}
	if !strings.Contains(attempts[0].Err.Error(), `no handler for kind "nobody"`) {
		t.Errorf("unknown kind: Err = %v", attempts[0].Err)
	}
	if !strings.Contains(attempts[1].Err.Error(), "middleware bug") {
		t.Errorf("middleware panic: Err = %v", attempts[1].Err)
	}
	if want := []string{"w>", "<w:retry", "w>"}; !slices.Equal(tr.get(), want) {
		t.Errorf("worker middleware trail = %q, want %q (the panic skips the end of w)", tr.get(), want)
	}
	if n := hook.calls(); n != 0 {
		t.Errorf("error handler called %d times for failures that are not the handler's", n)
	}
}

func TestNilMiddlewareRefused(t *testing.T) {
	t.Parallel()
	_, err := worker.New(redistest.Miniredis(t), &worker.Config{Namespace: "ns", Middleware: []worker.Middleware{nil}})
	var invalid *headgate.InvalidError
	if !errors.As(err, &invalid) || invalid.Field != "Config.Middleware[0]" {
		t.Errorf("New with a nil middleware: %v, want InvalidError on Config.Middleware[0]", err)
	}
	w, err := worker.New(redistest.Miniredis(t), &worker.Config{Namespace: "ns"})
	mustOK(t, err)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `nil middleware [1] for kind "k"`) {
			t.Errorf("HandleFunc with a nil middleware: recovered %v", r)
		}
	}()
	worker.HandleFunc(w, "k", func(context.Context, *headgate.Claim) error { return nil },
		func(n worker.HandlerFunc) worker.HandlerFunc { return n }, nil)
}

// countingErrorHandler counts its calls and returns what results says for a job's args.
type countingErrorHandler struct {
	mu      sync.Mutex
	n       int
	errs    []string
	panics  []string
	results map[string]*worker.ErrorHandlerResult // by job id
}

func (h *countingErrorHandler) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *countingErrorHandler) HandleError(_ context.Context, c *headgate.Claim, err error) *worker.ErrorHandlerResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.errs = append(h.errs, c.Envelope.ID+": "+err.Error())
	return h.results[c.Envelope.ID]
}

func (h *countingErrorHandler) HandlePanic(_ context.Context, c *headgate.Claim, value any, stack string) *worker.ErrorHandlerResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	if !strings.Contains(stack, "panicky") {
		h.panics = append(h.panics, c.Envelope.ID+": stack without the panicking function")
	} else {
		h.panics = append(h.panics, c.Envelope.ID+": "+value.(string))
	}
	return h.results[c.Envelope.ID]
}

func TestErrorHandlerChangesOutcome(t *testing.T) {
	t.Parallel()
	hook := &countingErrorHandler{results: map[string]*worker.ErrorHandlerResult{
		"to-skip":        {Err: worker.Skip("hook gave up")},
		"to-success":     {Err: nil},
		"panic-to-skip":  {Err: worker.Skip("hook caught a panic")},
		"retry-after":    {Err: worker.RetryAfter(time.Hour, errors.New("hook: later"))},
		"as-is":          nil,
		"steered":        {Err: errors.New("must not be asked")},
		"panic-as-is":    nil,
		"wrapped-result": {Err: errors.New("hook rewrote the error")},
	}}
	tr := &trail{}
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.ErrorHandler = hook
		c.Middleware = []worker.Middleware{recording(tr, "w")}
	})
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		switch job.Args.Name {
		case "panic":
			panicky()
		case "steer":
			return worker.Skip("handler skipped")
		}
		return errors.New("handler failed")
	})
	ids := []struct{ id, name string }{
		{"to-skip", "fail"}, {"to-success", "fail"}, {"panic-to-skip", "panic"}, {"retry-after", "fail"},
		{"as-is", "fail"}, {"steered", "steer"}, {"panic-as-is", "panic"}, {"wrapped-result", "fail"},
	}
	for i, j := range ids {
		b.enqueue(j.id, testArgs{Name: j.name}, func(e *headgate.Envelope) { e.Priority = int32(-i) })
	}
	attempts := b.work(len(ids))
	type end struct {
		Outcome headgate.Outcome
		State   headgate.State
	}
	want := map[string]end{
		"to-skip":        {headgate.OutcomeSkip, headgate.StateArchived},
		"to-success":     {headgate.OutcomeSuccess, headgate.StateDeleted},
		"panic-to-skip":  {headgate.OutcomeSkip, headgate.StateArchived},
		"retry-after":    {headgate.OutcomeRetry, headgate.StateRetryable},
		"as-is":          {headgate.OutcomeRetry, headgate.StateRetryable},
		"steered":        {headgate.OutcomeSkip, headgate.StateArchived},
		"panic-as-is":    {headgate.OutcomeRetry, headgate.StateRetryable},
		"wrapped-result": {headgate.OutcomeRetry, headgate.StateRetryable},
	}
	if len(attempts) != len(ids) {
		t.Fatalf("%d attempts, want %d", len(attempts), len(ids))
	}
	for _, a := range attempts {
		if got := (end{a.Outcome, a.State}); got != want[a.JobID] {
			t.Errorf("job %s ended %+v, want %+v", a.JobID, got, want[a.JobID])
		}
	}
	ctx := context.Background()
	for id, sub := range map[string]string{
		"to-skip": "hook gave up", "panic-to-skip": "hook caught a panic", "retry-after": "hook: later",
		"as-is": "handler failed", "wrapped-result": "hook rewrote the error", "panic-as-is": "the handler fell over",
	} {
		errs, err := b.store.JobErrors(ctx, id)
		mustOK(t, err)
		if len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Message, sub) {
			t.Errorf("job %s error history %q, want the last to contain %q", id, errs, sub)
		}
	}
	// RetryAfter from the hook sets the delay: the job is due an hour later, not after
	// the 1s backoff.
	j, err := b.store.GetJob(ctx, "retry-after")
	mustOK(t, err)
	if want := epoch.Add(time.Hour); !j.ScheduledAt.Equal(want) {
		t.Errorf("retry-after is due at %s, want %s", j.ScheduledAt, want)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if hook.n != 7 {
		t.Errorf("error handler called %d times, want 7 (not for the handler's own Skip): errors %q panics %q", hook.n, hook.errs, hook.panics)
	}
	if want := []string{"panic-to-skip: the handler fell over", "panic-as-is: the handler fell over"}; !slices.Equal(hook.panics, want) {
		t.Errorf("panics = %q, want %q", hook.panics, want)
	}
	// The middleware sees what the hook made of each attempt.
	var outcomes []string
	for _, s := range tr.get() {
		if strings.HasPrefix(s, "<w:") {
			outcomes = append(outcomes, strings.TrimPrefix(s, "<w:"))
		}
	}
	if want := []string{"skip", "success", "skip", "retry", "retry", "skip", "retry", "retry"}; !slices.Equal(outcomes, want) {
		t.Errorf("middleware saw outcomes %q, want %q", outcomes, want)
	}
}

func TestRepeatedFailuresLogOncePerInterval(t *testing.T) {
	t.Parallel()
	logs := newLogCapture()
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.Logger = logs.logger()
		c.LogRepeatInterval = time.Minute
	})
	var (
		mu  sync.Mutex
		now = time.Unix(1000, 0)
	)
	worker.SetLogClock(b.worker, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	})
	step := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		if job.Args.Name == "panic" {
			panicky()
		}
		return errors.New("downstream is down")
	})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		b.enqueue(id, testArgs{}, nil)
	}
	b.enqueue("p1", testArgs{Name: "panic"}, func(e *headgate.Envelope) { e.Priority = -1 })
	b.enqueue("p2", testArgs{Name: "panic"}, func(e *headgate.Envelope) { e.Priority = -1 })
	if n := len(b.work(10)); n != 7 {
		t.Fatalf("%d attempts, want 7", n)
	}
	failed := logs.matching(slog.LevelWarn, "job handler failed")
	panicked := logs.matching(slog.LevelError, "job handler panicked")
	if len(failed) != 1 || len(panicked) != 1 {
		t.Fatalf("%d failure lines and %d panic lines, want 1 of each: %s", len(failed), len(panicked), logs.all())
	}
	checkJobFields(t, failed[0], map[string]string{"job_id": "a", "kind": "test", "error": "downstream is down"})
	if _, ok := failed[0].Attrs["repeated"]; ok {
		t.Errorf("first line carries repeated: %v", failed[0].Attrs)
	}
	// Every attempt's error is in its job's history, logged or not.
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		errs, err := b.store.JobErrors(context.Background(), id)
		mustOK(t, err)
		if len(errs) != 1 || !strings.Contains(errs[0].Message, "downstream is down") {
			t.Errorf("job %s history %q, want the failure", id, errs)
		}
	}

	// Within the interval, nothing more; past it, one line that counts the left-out ones.
	mustOK(t, b.store.AdvanceClock(context.Background(), time.Hour))
	b.promote()
	step(59 * time.Second)
	b.work(1) // a's retry
	if n := len(logs.matching(slog.LevelWarn, "job handler failed")); n != 1 {
		t.Fatalf("%d failure lines within the interval, want 1", n)
	}
	step(time.Second)
	b.work(1)
	failed = logs.matching(slog.LevelWarn, "job handler failed")
	if len(failed) != 2 {
		t.Fatalf("%d failure lines past the interval, want 2: %s", len(failed), logs.all())
	}
	checkJobFields(t, failed[1], map[string]string{"repeated": "5"})
}

func TestLogRepeatIntervalNegativeLogsEveryFailure(t *testing.T) {
	t.Parallel()
	logs := newLogCapture()
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.Logger = logs.logger()
		c.LogRepeatInterval = -1
	})
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		return errors.New("same error")
	})
	for _, id := range []string{"a", "b", "c"} {
		b.enqueue(id, testArgs{}, nil)
	}
	b.work(3)
	if n := len(logs.matching(slog.LevelWarn, "job handler failed")); n != 3 {
		t.Errorf("%d lines, want 3: %s", n, logs.all())
	}
}

func TestQuarantineLoggedByReclaimDuty(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		logs := newLogCapture()
		b := setup(t, rdb, func(c *worker.Config) {
			c.Logger = logs.logger()
			c.CrashLimit = 1
		})
		b.enqueue("crashy", testArgs{}, func(e *headgate.Envelope) {
			e.Queue, e.PartitionKey, e.Fingerprint = "q1", "tenant-7", "fp-1"
		})
		ctx := context.Background()
		// A worker that is not this one admits the job and dies: its lease expires.
		claims, err := b.store.Admit(ctx, headgate.AdmitRequest{Worker: "dead", LeaseID: "l1",
			Queues: []string{"q1"}, Capacity: 1, Lease: time.Second})
		mustOK(t, err)
		if len(claims) != 1 {
			t.Fatalf("admitted %d jobs, want 1", len(claims))
		}
		mustOK(t, b.store.AdvanceClock(ctx, 2*time.Second))
		worker.Handle(b.worker, func(context.Context, *worker.Job[testArgs]) error { return nil })
		b.start()
		l := logs.wait(t, 1, slog.LevelError, "quarantined")[0]
		checkJobFields(t, l, map[string]string{"job_id": "crashy", "kind": "test", "queue": "q1",
			"partition": "tenant-7", "fingerprint": "fp-1", "crashes": "1", "attempt": "1"})
		if l.Attrs["worker"] != b.worker.ID() {
			t.Errorf("logged by worker %q, want %q (the duty holder)", l.Attrs["worker"], b.worker.ID())
		}
	})
}

// A handler that ends its job through a transition of its own and returns Settled (as
// every workflow task does) did not fail: the error handler is not asked about it, and
// middleware that label outcomes (the metrics adapters) see a success, not a retry.
func TestSettledIsNotAFailure(t *testing.T) {
	t.Parallel()
	var hook countingErrorHandler
	labels := make(chan string, 1)
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.ErrorHandler = &hook
		c.Middleware = []worker.Middleware{func(next worker.HandlerFunc) worker.HandlerFunc {
			return func(ctx context.Context, c *headgate.Claim) error {
				err := next(ctx, c)
				labels <- worker.OutcomeLabel(ctx, err)
				return err
			}
		}}
	})
	worker.HandleFunc(b.worker, "self", func(ctx context.Context, c *headgate.Claim) error {
		res, err := b.store.AckMany(ctx, []headgate.AckRequest{{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess}})
		if err != nil {
			return err
		}
		if res[0].Err != nil {
			return res[0].Err
		}
		return worker.Settled()
	})
	b.enqueueRaw(headgate.Envelope{ID: "j1", Kind: "self"}, func(e *headgate.Envelope) { e.Retention = time.Hour })
	b.work(1)
	if n := hook.calls(); n != 0 {
		t.Errorf("error handler called %d times (%q) for a handler that settled its job", n, hook.errs)
	}
	if l := recv(t, labels, "the middleware's label"); l != headgate.OutcomeSuccess.String() {
		t.Errorf("OutcomeLabel of a settled attempt = %q, want %q", l, headgate.OutcomeSuccess)
	}
	if o := worker.OutcomeOf(worker.Settled()); o != headgate.OutcomeSuccess {
		t.Errorf("OutcomeOf(Settled()) = %s, want success", o)
	}
	if j := b.job("j1"); j.State != headgate.StateCompleted {
		t.Errorf("job state = %s, want completed by the handler's own ack", j.State)
	}
}

// An attempt whose JobTimeout fired and that fails is acked as a retry whatever error it
// returns; OutcomeLabel, which the metrics middleware label attempts with, says so too.
func TestOutcomeLabelOfATimedOutAttempt(t *testing.T) {
	t.Parallel()
	labels := make(chan string, 1)
	b := setup(t, redistest.Miniredis(t), func(c *worker.Config) {
		c.JobTimeout = 5 * time.Millisecond
		c.Middleware = []worker.Middleware{func(next worker.HandlerFunc) worker.HandlerFunc {
			return func(ctx context.Context, c *headgate.Claim) error {
				err := next(ctx, c)
				labels <- worker.OutcomeLabel(ctx, err)
				return err
			}
		}}
	})
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		<-ctx.Done()
		return worker.Skip("gave up: " + context.Cause(ctx).Error())
	})
	b.enqueue("j1", testArgs{}, nil)
	attempts := b.work(1)
	if len(attempts) != 1 || attempts[0].Outcome != headgate.OutcomeRetry {
		t.Fatalf("attempts = %+v, want one retry (the timeout)", attempts)
	}
	if l := recv(t, labels, "the middleware's label"); l != headgate.OutcomeRetry.String() {
		t.Errorf("OutcomeLabel of a timed-out attempt = %q, want %q, the outcome it was acked as", l, headgate.OutcomeRetry)
	}
}

// A nil handler is refused when it is registered, by Handle as by HandleFunc, rather
// than registered and then failing every job of its kind with a nil-call panic.
func TestNilHandlerRefused(t *testing.T) {
	t.Parallel()
	w, err := worker.New(redistest.Miniredis(t), &worker.Config{Namespace: "ns"})
	mustOK(t, err)
	for name, register := range map[string]func(){
		"Handle":     func() { worker.Handle[testArgs](w, nil) },
		"HandleFunc": func() { worker.HandleFunc(w, "test", nil) },
	} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.Contains(r, `nil handler for kind "test"`) {
					t.Errorf("%s with a nil handler: recovered %q, want a panic naming the kind", name, r)
				}
			}()
			register()
		}()
	}
}

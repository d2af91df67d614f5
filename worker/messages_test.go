package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/worker"
)

// An error message repeats at most 200 bytes of a name the caller passed. Validation is
// Go-side, so one backend is enough.
func TestMessagesCutLongNames(t *testing.T) {
	t.Parallel()
	b := setup(t, redistest.Miniredis(t), nil)
	long := strings.Repeat("s", 10_000)
	stepErr := make(chan error, 1)
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		stepErr <- worker.Step(ctx, long, func(context.Context) error { return nil })
		return nil
	})
	b.enqueue("j1", testArgs{}, nil)
	b.work(1)
	err := recv(t, stepErr, "the step's error")
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Errorf("Step with a 10000-byte name: %.300v…; want an error quoting 200 bytes of it and its length", err)
	}
}

// A step name Step refuses is bad input: an *headgate.InvalidError naming the name, so
// that an ErrorHandler can tell the program's mistake from a failure of the step, and
// the step's fn does not run.
func TestStepRefusesBadNameWithInvalidError(t *testing.T) {
	t.Parallel()
	b := setup(t, redistest.Miniredis(t), nil)
	errs := make(chan error, 3)
	ran := false
	worker.Handle(b.worker, func(ctx context.Context, job *worker.Job[testArgs]) error {
		for _, name := range []string{"", "a{b}", "line\nbreak"} {
			errs <- worker.Step(ctx, name, func(context.Context) error { ran = true; return nil })
		}
		return nil
	})
	b.enqueue("j1", testArgs{}, nil)
	b.work(1)
	for range 3 {
		err := recv(t, errs, "the step's error")
		var inv *headgate.InvalidError
		if !errors.As(err, &inv) || inv.Field != "name" {
			t.Errorf("Step with a bad name: %v (%T); want an *headgate.InvalidError for \"name\"", err, err)
		}
	}
	if ran {
		t.Error("Step ran the fn of a step whose name it refused")
	}
}

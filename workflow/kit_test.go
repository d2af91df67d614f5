package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
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
	t.Parallel()
	env := workflowtest.New(t)
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
}

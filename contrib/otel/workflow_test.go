package headgateotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate"
	headgateotel "github.com/headgate/headgate/contrib/otel"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/headgate/headgate/worker"
	"github.com/headgate/headgate/workflow"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A workflow's tasks get a span each under the attempt's, and each run of a step's
// function a span under its task's; a replayed step has none.
func TestWorkflowTaskAndStepSpans(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		store := rqueuetest.NewStore(t, rdb)
		mustOK(t, store.FreezeClock(ctx, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		w, err := worker.New(rdb, &worker.Config{Namespace: store.Namespace(), ID: "traced",
			Middleware: []worker.Middleware{headgateotel.WorkerMiddleware(&headgateotel.Config{TracerProvider: tp})}})
		mustOK(t, err)
		flaky := 0
		workflow.Register(w, "checkout", func(ctx workflow.Context, id string) (string, error) {
			charge := func() (string, error) {
				return workflow.Step(ctx, "charge", func(context.Context) (string, error) { return "ch_" + id, nil }, nil)
			}
			if _, err := charge(); err != nil {
				return "", err
			}
			if _, err := workflow.Step(ctx, "reserve", func(context.Context) (int, error) {
				if flaky++; flaky == 1 {
					return 0, errors.New("warehouse busy")
				}
				return 7, nil
			}, &workflow.StepOptions{Retries: 1, Backoff: time.Second}); err != nil {
				return "", err
			}
			return charge()
		})
		_, err = workflow.NewClientFromStore(store).Start(ctx, "checkout", "42", workflow.StartOptions{ID: "order-42"})
		mustOK(t, err)
		runDue := func() {
			for {
				_, _, err := store.FireTimers(ctx, 100)
				mustOK(t, err)
				_, _, err = store.PromoteDue(ctx, 100)
				mustOK(t, err)
				attempts, err := w.Work(ctx, 1)
				mustOK(t, err)
				if len(attempts) == 0 {
					return
				}
			}
		}
		runDue() // charge#1 and reserve#1, which fails and waits for its retry
		mustOK(t, store.AdvanceClock(ctx, time.Second))
		runDue() // charge#1 replayed; reserve#1 again, then charge#2

		spans := exp.GetSpans()
		byID := map[trace.SpanID]tracetest.SpanStub{}
		for _, s := range spans {
			byID[s.SpanContext.SpanID()] = s
		}
		var tasks, steps []string
		for _, s := range spans {
			parent, ok := byID[s.Parent.SpanID()]
			switch {
			case s.Name == "workflow checkout":
				if !ok || !strings.HasPrefix(parent.Name, "process ") || s.SpanKind != trace.SpanKindInternal {
					t.Errorf("task span's parent is %q (found %v), kind %s; want the attempt's process span, internal",
						parent.Name, ok, s.SpanKind)
				}
				checkAttrs(t, s, map[string]string{"headgate.workflow.id": "order-42", "headgate.workflow.type": "checkout"})
				if attrs(s)["headgate.workflow.run_id"] == "" {
					t.Errorf("task span without a run id: %v", attrs(s))
				}
				tasks = append(tasks, s.Status.Code.String())
			case strings.HasPrefix(s.Name, "step "):
				if !ok || parent.Name != "workflow checkout" || parent.SpanContext.TraceID() != s.SpanContext.TraceID() {
					t.Errorf("step span %q's parent is %q (found %v), want the task span", s.Name, parent.Name, ok)
				}
				a := attrs(s)
				if a["headgate.workflow.id"] != "order-42" || a["headgate.workflow.run_id"] != attrs(parent)["headgate.workflow.run_id"] {
					t.Errorf("step span %q: workflow attributes %v, want those of its task %v", s.Name, a, attrs(parent))
				}
				steps = append(steps, fmt.Sprintf("%s occurrence %s attempt %s %s", a["headgate.step.key"],
					a["headgate.step.occurrence"], a["headgate.step.attempt"], s.Status.Code))
			}
		}
		// The spans are exported as they end: a step's before its task's.
		wantSteps := []string{"charge#1 occurrence 1 attempt 1 Unset", "reserve#1 occurrence 1 attempt 1 Error",
			"reserve#1 occurrence 1 attempt 2 Unset", "charge#2 occurrence 2 attempt 1 Unset"}
		if fmt.Sprint(steps) != fmt.Sprint(wantSteps) {
			t.Errorf("step spans:\n%s\nwant\n%s", strings.Join(steps, "\n"), strings.Join(wantSteps, "\n"))
		}
		if fmt.Sprint(tasks) != fmt.Sprint([]string{codes.Unset.String(), codes.Unset.String()}) {
			t.Errorf("task spans' status: %v, want two (two tasks), unset", tasks)
		}
		run, err := store.GetWorkflow(ctx, "order-42")
		mustOK(t, err)
		if run.Status != headgate.WorkflowCompleted {
			t.Errorf("workflow status %s, want completed", run.Status)
		}
	})
}

package headgateotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/headgate/headgate/workflow"
)

// workflowTaskPrefix starts the kinds of workflow tasks: WorkerMiddleware installs the
// task and step spans' observer for those jobs only.
var workflowTaskPrefix = workflow.TaskKind("")

// workflowObserver makes the spans of workflow tasks and steps: an INTERNAL span
// "workflow <type>" per task, a child of the attempt's span, and under it an INTERNAL
// span "step <name>" per attempt of a step's function (a replayed step runs nothing and
// has no span).
type workflowObserver struct{ tracer trace.Tracer }

func (o workflowObserver) StartTask(ctx context.Context, info workflow.TaskInfo) (context.Context, func(error)) {
	ctx, span := o.tracer.Start(ctx, "workflow "+info.WorkflowType, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("messaging.system", "headgate"),
			attribute.String("headgate.workflow.type", info.WorkflowType),
		))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("headgate.workflow.id", info.WorkflowID),
			attribute.String("headgate.workflow.run_id", info.RunID),
			attribute.Int("headgate.workflow.history_events", info.History),
		)
	}
	return ctx, func(err error) { endWithError(span, err) }
}

func (o workflowObserver) StartStep(ctx context.Context, info workflow.StepInfo) (context.Context, func(error)) {
	ctx, span := o.tracer.Start(ctx, "step "+info.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("messaging.system", "headgate"),
			attribute.String("headgate.step", info.Name),
		))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("headgate.workflow.id", info.WorkflowID),
			attribute.String("headgate.workflow.run_id", info.RunID),
			attribute.String("headgate.step.key", info.Key),
			attribute.Int("headgate.step.occurrence", info.Occurrence),
			attribute.Int("headgate.step.attempt", info.Attempt),
		)
	}
	return ctx, func(err error) { endWithError(span, err) }
}

func endWithError(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

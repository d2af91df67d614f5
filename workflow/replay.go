package workflow

import (
	"context"
	"fmt"

	"github.com/headgate/headgate"
)

// Replay replays fn over a recorded history (a run's events from its workflow_started
// on, as Store.ReadHistory returns them) against the code as it is now, running nothing
// new: no step's function, no timer, no child. It returns the *NonDeterminismError the
// code meets, another error that would fail a task (a panic), or nil when the code
// replays the history. Use it in a unit test with a history recorded from production to
// catch a change that would break running workflows.
func Replay[In, Out any](fn func(ctx Context, in In) (Out, error), history []headgate.Event) error {
	start := -1
	for i, e := range history {
		if e.Kind == headgate.EventWorkflowStarted {
			start = i
		}
	}
	if start < 0 {
		return fmt.Errorf("workflow: Replay: the history has no workflow_started event")
	}
	run := history[start:]
	t := newTask("replay", &headgate.WorkflowSummary{WorkflowType: run[0].WorkflowType, RunID: run[0].RunID}, run)
	t.replay, t.jobCtx = true, context.Background()
	_, _, _, err := t.execute(jsonBody(fn))
	return err
}

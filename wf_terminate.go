package headgate

import (
	"context"
	"encoding/json"
)

// TerminateWorkflow ends a workflow's open run at once, without running its code: its
// task is removed (a worker running it is told to stop and its commit is refused), the
// events waiting in its inbox are dropped, a workflow_terminated event closes the run,
// its timers are retired, the step jobs its steps wait for are deleted unless running (a
// running one's commit is refused with *StepNotPendingError) and a parent gets
// child_failed. An id without a history is ErrWorkflowNotFound, a closed run
// *WorkflowClosedError.
func (s *Store) TerminateWorkflow(ctx context.Context, workflowID, reason, operator string) error {
	if err := s.checkFormat(ctx); err != nil {
		return err
	}
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return err
	}
	// A timer armed after this read fires into a closed run, which only retires it.
	timers, err := s.rdb.HKeys(ctx, s.keys.WorkflowTimers(workflowID)).Result()
	if err != nil {
		return err
	}
	timerList, err := json.Marshal(append([]string{}, timers...))
	if err != nil {
		return err
	}
	msg := "terminated"
	if reason != "" {
		msg = "terminated: " + reason
	}
	end, err := encodeEvent(Event{Kind: EventWorkflowTerminated, Reason: reason, Operator: operator})
	if err != nil {
		return err
	}
	parent, err := encodeEvent(Event{Kind: EventChildFailed, ChildWorkflowID: workflowID, Error: &WorkflowError{Message: msg}})
	if err != nil {
		return err
	}
	_, err = s.run(ctx, scriptWfTerminate, workflowID, workflowID, end, parent, timerList)
	return err
}

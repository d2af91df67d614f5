package headgate

import "context"

// SignalWorkflow delivers a signal (name, payload) to the open run of a workflow: the
// run's code receives it from an await of that name, in the order signals arrived. It
// is appended to the history at once, or, while the run's task is running, kept in the
// inbox until that task commits; either way a task follows. An id without a history is
// ErrWorkflowNotFound, a closed run *WorkflowClosedError.
func (s *Store) SignalWorkflow(ctx context.Context, workflowID, name string, payload []byte) error {
	return s.deliver(ctx, workflowID, Event{Kind: EventSignalReceived, Name: name, Payload: payload})
}

// CancelWorkflow asks a workflow's open run to stop: the run's code sees a cancelled
// context at its next step, wait or child (it may still run compensation under a
// context without cancellation) and the run closes as cancelled when its function
// returns an error. It is delivered like a signal.
func (s *Store) CancelWorkflow(ctx context.Context, workflowID, reason, operator string) error {
	return s.deliver(ctx, workflowID, Event{Kind: EventWorkflowCancelRequested, Reason: reason, Operator: operator})
}

func (s *Store) deliver(ctx context.Context, workflowID string, e Event) error {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return err
	}
	if e.Kind == EventSignalReceived {
		if err := validateRequired("name", e.Name, true); err != nil {
			return err
		}
	}
	if err := validateEvent("event", e); err != nil {
		return err
	}
	body, err := encodeEvent(e)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, scriptWfSignal, workflowID, workflowID, string(e.Kind), body)
	return err
}

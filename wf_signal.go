package headgate

import (
	"context"
	"strings"
)

// SignalWorkflow delivers a signal (name, payload) to the open run of a workflow: the
// run's code receives it from an await of that name, in the order signals arrived. It
// is appended to the history at once, or, while the run's task is running, kept in the
// inbox until that task commits; either way a task follows. An id without a history is
// ErrWorkflowNotFound, a closed run *WorkflowClosedError, a name no await can take
// (see validateSignalName) *InvalidError.
func (s *Store) SignalWorkflow(ctx context.Context, workflowID, name string, payload []byte) error {
	_, err := s.deliver(ctx, workflowID, Event{Kind: EventSignalReceived, Name: name, Payload: payload})
	return err
}

// CancelWorkflow asks a workflow's open run to stop: the run's code sees a cancelled
// context at its next step, wait or child (it may still run compensation under a
// context without cancellation) and the run closes as cancelled when its function
// returns an error. It is delivered like a signal, once per run: while a cancel request
// of the run is pending (the run is open), a repeat writes nothing and returns false,
// whatever its reason. A retry of the run, or a new run of a continue-as-new, may be
// cancelled again.
func (s *Store) CancelWorkflow(ctx context.Context, workflowID, reason, operator string) (requested bool, err error) {
	how, err := s.deliver(ctx, workflowID, Event{Kind: EventWorkflowCancelRequested, Reason: reason, Operator: operator})
	return err == nil && how != "already", err
}

// deliver runs wf_signal.lua and returns its reply: "inbox", "appended", or "already" (a
// cancel of the run requested before).
func (s *Store) deliver(ctx context.Context, workflowID string, e Event) (string, error) {
	if err := validateRequired("workflowID", workflowID, true); err != nil {
		return "", err
	}
	if e.Kind == EventSignalReceived {
		if err := validateSignalName(e.Name); err != nil {
			return "", err
		}
	}
	if err := validateEvent("event", e); err != nil {
		return "", err
	}
	body, err := encodeEvent(e)
	if err != nil {
		return "", err
	}
	reply, err := s.run(ctx, scriptWfSignal, workflowID, workflowID, string(e.Kind), body)
	if err != nil {
		return "", err
	}
	return asString(reply, 0), nil
}

// maxSignalNameBytes is the longest signal name a workflow can await (package
// workflow's names of steps, sleeps, awaits and children).
const maxSignalNameBytes = 200

// validateSignalName refuses a signal name that no workflow can await: package
// workflow refuses such a name in Await (it names an await "<scope>/<name>#<n>", the
// scope of a Parallel branch "<name>#<n>[<i>]/"), so a signal of it would wait unread
// in the run's history for good.
func validateSignalName(name string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	if len(name) > maxSignalNameBytes {
		return invalid("name", "longer than %d bytes: no workflow can await it", maxSignalNameBytes)
	}
	if i := strings.IndexAny(name, "/#[]"); i >= 0 {
		return invalid("name", "%q contains %q: no workflow can await it", name, name[i:i+1])
	}
	return nil
}

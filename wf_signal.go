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
// (see ValidateWorkflowName) *InvalidError.
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
		if err := ValidateWorkflowName("name", e.Name); err != nil {
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

// maxWorkflowNameBytes is the longest name package workflow takes for a step, sleep,
// await (a signal) or child, and for a workflow type.
const maxWorkflowNameBytes = 200

// ValidateWorkflowName refuses, with an *InvalidError of field, a name package workflow
// cannot use: empty, longer than 200 bytes, with braces or control characters, or with
// '/', '#', '[' or ']', which its scoped names ("<scope>/<name>#<n>", a Parallel branch's
// scope "<name>#<n>[<i>]/") use. A signal of such a name could never be awaited and
// would wait unread in the run's history for good.
func ValidateWorkflowName(field, name string) error {
	if err := validateRequired(field, name, true); err != nil {
		return err
	}
	if len(name) > maxWorkflowNameBytes {
		return invalid(field, "longer than %d bytes: no workflow can use it", maxWorkflowNameBytes)
	}
	if i := strings.IndexAny(name, "/#[]"); i >= 0 {
		return invalid(field, "%q contains %q: no workflow can use it", name, name[i:i+1])
	}
	return nil
}

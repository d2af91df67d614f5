package inspector

import (
	"context"

	"github.com/headgate/headgate"
)

// Workflow returns a workflow's row: its status, type, current run, parent and head.
func (i *Inspector) Workflow(ctx context.Context, id string) (*headgate.WorkflowSummary, error) {
	return i.store.GetWorkflow(ctx, id)
}

// WorkflowHistory returns a workflow's whole history, every run of its chain.
func (i *Inspector) WorkflowHistory(ctx context.Context, id string) ([]headgate.Event, error) {
	return i.store.ReadHistory(ctx, id)
}

// Workflows lists workflows by type, status, start time and parent, a page at a time.
func (i *Inspector) Workflows(ctx context.Context, f headgate.WorkflowFilter, cursor string, limit int) ([]*headgate.WorkflowSummary, string, error) {
	return i.store.Query(ctx, f, cursor, limit)
}

// PausedWorkflows lists the ids of paused workflows, a page at a time.
func (i *Inspector) PausedWorkflows(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return i.store.ListPaused(ctx, cursor, limit)
}

// SignalWorkflow sends a signal (payload as the runtime encodes it: JSON) to a run.
func (i *Inspector) SignalWorkflow(ctx context.Context, id, name string, payload []byte) error {
	return i.audit(i.store.SignalWorkflow(ctx, id, name, payload), "workflow signalled", "workflow_id", id, "signal", name)
}

// CancelWorkflow asks a run to stop: its code sees a cancelled context at its next step.
// It returns false, writing and logging nothing, when a cancel request of the run is
// pending already.
func (i *Inspector) CancelWorkflow(ctx context.Context, id, reason string) (requested bool, err error) {
	requested, err = i.store.CancelWorkflow(ctx, id, reason, "")
	return requested, i.auditChange(requested, err, "workflow cancel requested", "workflow_id", id)
}

// PauseWorkflow holds a run's tasks until ResumeWorkflow.
func (i *Inspector) PauseWorkflow(ctx context.Context, id, reason string) (headgate.WorkflowPauseResult, error) {
	r, err := i.store.PauseWorkflow(ctx, id, reason, "")
	return r, i.auditChange(r != headgate.PauseUnchanged, err, "workflow paused", "workflow_id", id, "result", string(r))
}

// ResumeWorkflow releases a paused run.
func (i *Inspector) ResumeWorkflow(ctx context.Context, id, reason string) (headgate.WorkflowPauseResult, error) {
	r, err := i.store.ResumeWorkflow(ctx, id, reason, "")
	return r, i.auditChange(r != headgate.PauseUnchanged, err, "workflow resumed", "workflow_id", id, "result", string(r))
}

// TerminateWorkflow ends a run at once without running its code.
func (i *Inspector) TerminateWorkflow(ctx context.Context, id, reason string) error {
	return i.audit(i.store.TerminateWorkflow(ctx, id, reason, ""), "workflow terminated", "workflow_id", id)
}

// RetryWorkflow retries a failed run from its last good point and returns its task's id.
func (i *Inspector) RetryWorkflow(ctx context.Context, id string) (string, error) {
	task, err := i.store.RetryWorkflow(ctx, id)
	return task, i.audit(err, "workflow retried", "workflow_id", id, "task_id", task)
}

// WorkflowRuns returns the runs of a workflow id's chain in start order.
func (i *Inspector) WorkflowRuns(ctx context.Context, id string) ([]headgate.RunSummary, error) {
	return i.store.ReadRunChain(ctx, id)
}

// WorkerDeployments lists the worker deployments in name order, a page at a time
// (undecodable rows apart): the versions each serves and its desired state.
func (i *Inspector) WorkerDeployments(ctx context.Context, cursor string, limit int) (*headgate.WorkerDeploymentListing, string, error) {
	return i.store.ListWorkerDeployments(ctx, cursor, limit)
}

// OpenRunsByVersion returns how many runs are open on each of versions: a draining
// version is done when it has none.
func (i *Inspector) OpenRunsByVersion(ctx context.Context, versions ...string) (map[string]int64, error) {
	return i.store.OpenRunsByVersion(ctx, versions...)
}

// SetDeploymentState sets a worker deployment's desired state: draining (or drained)
// stops new runs starting on its versions unless another deployment that lists them is
// active, while the runs on them finish. It returns the deployment as stored, nil when
// there is none. A deployment in that state already is not logged.
func (i *Inspector) SetDeploymentState(ctx context.Context, name string, desired headgate.DesiredState) (*headgate.WorkerDeployment, error) {
	prev, readErr := i.store.GetWorkerDeployment(ctx, name) // for the audit line (audit.go)
	d, err := i.store.SetDesiredState(ctx, name, desired)
	if d == nil {
		return nil, err
	}
	changed := readErr != nil || prev == nil || prev.Desired != desired
	return d, i.auditChange(changed, err, "worker deployment state set", "deployment", name, "desired", string(desired))
}

package inspector

import (
	"context"
	"slices"
	"strings"

	"github.com/headgate/headgate"
)

// Aliases of the store's why and worker types.
type (
	// Explanation is why a job is not running now: its state and every reason that
	// applies, most decisive first, each with its numbers.
	Explanation = headgate.Explanation
	// Reason is one reason of an Explanation; Reason.Sentence says it in words.
	Reason = headgate.Reason
	// WhyOptions tunes Why (the quantum the turn count uses).
	WhyOptions = headgate.WhyOptions
	// WorkerStatus is a worker's latest heartbeat and whether it is live.
	WorkerStatus = headgate.WorkerStatus
	// WorkflowExplanation is why a workflow's run is not making progress now.
	WorkflowExplanation = headgate.WorkflowExplanation
	// WorkflowReason is one reason of a WorkflowExplanation.
	WorkflowReason = headgate.WorkflowReason
)

// Why explains, from the store's own state in one read-only script, why the job is not
// running now: staged, scheduled or retrying until a time, its queue paused, its rate
// class short of tokens, its partition's turn, a quarantined fingerprint, its queue at
// its enqueue limit, pinned to a worker that is not live, no live worker for its queue or
// kind, running (where, since when, until when), or finished (how). Several reasons may
// apply; they come most decisive first. It returns an error matching
// headgate.ErrJobNotFound for an id that names no job.
// For a workflow id, see WhyWorkflow.
func (i *Inspector) Why(ctx context.Context, id string, opts *WhyOptions) (*Explanation, error) {
	return i.store.Why(ctx, id, opts)
}

// WhyWorkflow explains why a workflow's run is not making progress: closed (status,
// when), paused (since), sleeping (timer, fire time), awaiting a signal (since, its
// timeout), waiting for a step job (with that job's own Why reasons) or a child (its
// status), its task job not running (with that job's
// own Why reasons) or running (the job's running reason). It returns an error matching
// headgate.ErrWorkflowNotFound for an id that names no workflow.
func (i *Inspector) WhyWorkflow(ctx context.Context, id string) (*WorkflowExplanation, error) {
	return i.store.WhyWorkflow(ctx, id)
}

// Workers lists the workers whose heartbeats the namespace keeps, live or not, the live
// ones first, each group by id: a worker is live until its last beat's liveness window
// ends; one that stopped, or has not beaten for longer, is listed until
// headgate.WorkerRetention has passed.
func (i *Inspector) Workers(ctx context.Context) ([]WorkerStatus, error) {
	ws, err := i.store.Workers(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ws, func(a, b WorkerStatus) int {
		switch {
		case a.Live == b.Live:
			return strings.Compare(a.ID, b.ID)
		case a.Live:
			return -1
		}
		return 1
	})
	return ws, nil
}

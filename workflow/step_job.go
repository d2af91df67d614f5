package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
)

// StepJob runs a step as a headgate job of its own (StepOptions.Job): a slow or
// rate-limited call (a payment API, a per-tenant quota) holds a slot of its queue,
// under its rate class and its partition's fair share, instead of the workflow task's;
// and a step that keeps killing its worker is quarantined as a job (its fingerprint is
// the step's), while the run's tasks go on running, so the run can still be cancelled.
//
// When the code first reaches the step, the task records a step_scheduled event and
// enqueues the step job in the same commit, then ends: the workflow's slot is free
// while the step waits and runs. The step job, of kind StepKind(type), replays the
// run's history up to the step (every earlier step, sleep and await returns what the
// history recorded) and runs the step's function there, then commits the attempt, fenced
// by its lease and by the step still waiting for that job: the result (or a failed
// attempt, retried after StepOptions' backoff as a new step job on the same queue), and
// the workflow's next task, in one script. A stale or duplicate step job (a lost reply,
// a reclaimed lease) cannot commit twice; one that finds the run closed, moved on or
// cancelled ends without effect, archived with the reason.
//
// Register the workflow type (the same code) on every worker that serves the step's
// queue: the step job runs the workflow function to reach the step, so a worker that
// serves only the step queue still needs workflow.Register for the type.
type StepJob struct {
	// Queue is the queue the step's jobs run on. Defaults to the run's queue.
	Queue string
	// Partition is the jobs' partition key: the queue's admission takes turns between
	// partitions (a tenant each, say). Defaults to none.
	Partition string
	// RateClass is the token bucket each attempt is charged at admission (see
	// Store.SetRateLimit). Defaults to none: unlimited.
	RateClass string
	// Weight is what an attempt costs its rate class and its partition's turn.
	// Defaults to 1.
	Weight int
}

// validate refuses a StepJob the store would refuse for a run on queue and version
// (nil is none: the step runs in the task), so the code learns it from Step rather than
// from a failing commit.
func (j *StepJob) validate(queue, version string) error {
	if j == nil {
		return nil
	}
	if err := headgate.ValidateQueueName("StepJob.Queue", j.Queue); err != nil {
		return err
	}
	if j.Queue != "" {
		queue = j.Queue
	}
	if q := headgate.VersionedQueue(queue, version); len(q) > headgate.MaxNameBytes {
		return &headgate.InvalidError{Field: "StepJob.Queue", Reason: fmt.Sprintf("on the run's version %q is the queue %q, longer than %d bytes", version, q, headgate.MaxNameBytes)}
	}
	if err := headgate.ValidateName("StepJob.Partition", j.Partition); err != nil {
		return err
	}
	if err := headgate.ValidateName("StepJob.RateClass", j.RateClass); err != nil {
		return err
	}
	if j.Weight < 0 || j.Weight > headgate.MaxWeight {
		return &headgate.InvalidError{Field: "StepJob.Weight", Reason: fmt.Sprintf("is %d, outside 0..%d", j.Weight, headgate.MaxWeight)}
	}
	return nil
}

// StepKind is the job kind of a workflow type's step jobs: "workflow-step:<type>".
func StepKind(workflowType string) string { return "workflow-step:" + workflowType }

// stepJobPayload is a step job's payload: which attempt of which step it runs.
type stepJobPayload struct {
	WorkflowID string `json:"workflow"`
	RunID      string `json:"run"`
	Step       string `json:"step"`
	Attempt    int    `json:"attempt"`
}

// stepJobs is what a task does with steps that run as jobs of their own.
type stepJobs struct {
	scheduled []headgate.StepJob // enqueued by the next commit
	// givenUp are the steps whose jobs the run gave up (a cancel): kept past checkpoints,
	// since the ending commit drops those steps' events from the inbox.
	givenUp []string

	// A step job's replay (step mode): target is the attempt it runs; ran is its
	// outcome once the step's function returned; skip says why the replay ends without
	// running it.
	target *stepJobPayload
	ran    *stepAttempt
	skip   string
}

// stepAttempt is the outcome of a step job's attempt (its target's).
type stepAttempt struct {
	result []byte
	err    error
	opts   StepOptions
}

// isStepTarget reports whether this replay is the step job of the attempt of step key.
func (t *task) isStepTarget(key string, attempt int) bool {
	return t.target != nil && t.target.Step == key && t.target.Attempt == attempt
}

// scheduleStep records that an attempt of step key runs as a step job and has the
// task's next commit enqueue it. The caller holds t.mu.
func (t *task) scheduleStep(key string, attempt int, j *StepJob) {
	queue := j.Queue
	if queue == "" {
		queue = t.queue
	}
	payload, err := json.Marshal(stepJobPayload{WorkflowID: t.wfID, RunID: t.row.RunID, Step: key, Attempt: attempt})
	if err != nil {
		t.fail(fmt.Errorf("workflow: step %s: encode the step job: %w", key, err))
	}
	t.record(headgate.Event{Kind: headgate.EventStepScheduled, Name: key, Attempt: attempt, Queue: queue,
		Partition: j.Partition, RateClass: j.RateClass}, nil)
	t.scheduled = append(t.scheduled, headgate.StepJob{Step: key, Queue: queue, Partition: j.Partition,
		RateClass: j.RateClass, Weight: j.Weight, Payload: payload})
}

// ranStep keeps the outcome of a step job's attempt for its handler to commit. The
// caller holds t.mu.
func (t *task) ranStep(out any, err error, o StepOptions) {
	a := &stepAttempt{err: err, opts: o}
	if err == nil {
		if a.result, err = json.Marshal(out); err != nil {
			a.err = fmt.Errorf("workflow: step %s: encode the result: %w", t.target.Step, err)
		}
	}
	t.ran = a
}

// registerStepJobs makes w serve the step jobs of a workflow type.
func registerStepJobs(w *worker.Worker, workflowType string, body func(Context, []byte) ([]byte, error)) {
	worker.HandleFunc(w, StepKind(workflowType), func(ctx context.Context, claim *headgate.Claim) error {
		return runStepJob(ctx, w, claim, body)
	})
}

// runStepJob runs one step job: it replays the run to the step, runs the step's
// function and commits the attempt. It returns worker.Settled when the commit acked
// the job; worker.Skip when the step no longer waits for this job (nothing to do); or
// the error that fails the job's attempt, retried with the job's backoff (a replay that
// does not match the history, a lost commit), since that is about this worker's code or
// connection, not the step's outcome.
func runStepJob(ctx context.Context, w *worker.Worker, claim *headgate.Claim, body func(Context, []byte) ([]byte, error)) error {
	var p stepJobPayload
	if err := json.Unmarshal(claim.Envelope.Payload, &p); err != nil || p.WorkflowID == "" || p.Step == "" {
		return worker.Skip(fmt.Sprintf("step job %s: the payload is not a step job's: %q", claim.Envelope.ID, claim.Envelope.Payload))
	}
	store := w.Store()
	t, err := loadTask(ctx, store, p.WorkflowID)
	if errors.Is(err, headgate.ErrWorkflowNotFound) {
		return skipStepJob(ctx, p, "the workflow has no history")
	}
	if err != nil {
		return err
	}
	switch {
	case t.row.Status.Closed():
		return skipStepJob(ctx, p, fmt.Sprintf("the run is %s", t.row.Status))
	case t.row.RunID != p.RunID:
		return skipStepJob(ctx, p, "the workflow is on run "+t.row.RunID)
	}
	// A replay: the task commits nothing, and only its target step runs.
	t.jobCtx, t.replay, t.target = ctx, true, &p
	if _, _, _, err := t.execute(body); err != nil {
		return fmt.Errorf("workflow %q: step job for %s: %w", p.WorkflowID, p.Step, err)
	}
	t.mu.Lock()
	ran, skip := t.ran, t.skip
	t.mu.Unlock()
	if ran == nil {
		if skip == "" {
			skip = fmt.Sprintf("the history has no attempt %d of the step waiting", p.Attempt)
		}
		return skipStepJob(ctx, p, skip)
	}
	c, err := stepCommit(ctx, store, claim, p, ran)
	if err != nil {
		return err
	}
	res, err := store.CommitWorkflowStep(ctx, c)
	if pending, ok := errors.AsType[*headgate.StepNotPendingError](err); ok {
		return skipStepJob(ctx, p, pending.Reason)
	}
	if err != nil {
		return fmt.Errorf("workflow %q: commit step %s: %w", p.WorkflowID, p.Step, err)
	}
	if res.RetryJobID != "" {
		worker.Log(ctx, fmt.Sprintf("step %s attempt %d failed; attempt %d is step job %s", p.Step, p.Attempt, p.Attempt+1, res.RetryJobID))
	}
	return worker.Settled()
}

// stepCommit is the commit of a step job's attempt: its result, its last failure, or a
// failure and the next attempt's step job on the same queue, partition and rate class,
// due after the step's backoff on the store clock.
func stepCommit(ctx context.Context, store *headgate.Store, claim *headgate.Claim, p stepJobPayload, a *stepAttempt) (headgate.StepCommit, error) {
	c := headgate.StepCommit{WorkflowID: p.WorkflowID, RunID: p.RunID, Step: p.Step, Lease: claim.LeaseRef()}
	if a.err == nil {
		c.Events = []headgate.Event{{Kind: headgate.EventStepCompleted, Name: p.Step, Attempt: p.Attempt, Result: a.result}}
		return c, nil
	}
	failed := headgate.Event{Kind: headgate.EventStepFailed, Name: p.Step, Attempt: p.Attempt,
		Error: &headgate.WorkflowError{Message: a.err.Error()}}
	if p.Attempt > a.opts.Retries {
		c.Events = []headgate.Event{failed}
		return c, nil
	}
	now, err := store.Now(ctx)
	if err != nil {
		return c, fmt.Errorf("workflow: step %s: read the store clock: %w", p.Step, err)
	}
	failed.FireAt = now.Add(a.opts.backoff(p.Attempt)).Truncate(time.Millisecond)
	next := p
	next.Attempt++
	payload, err := json.Marshal(next)
	if err != nil {
		return c, err
	}
	env := claim.Envelope
	c.Events = []headgate.Event{failed, {Kind: headgate.EventStepScheduled, Name: p.Step, Attempt: next.Attempt,
		Queue: env.Queue, Partition: env.PartitionKey, RateClass: env.RateClass, FireAt: failed.FireAt}}
	c.Retry = &headgate.StepJob{Step: p.Step, Queue: env.Queue, Partition: env.PartitionKey, RateClass: env.RateClass,
		Weight: env.Weight, Payload: payload, RunAt: failed.FireAt}
	return c, nil
}

// skipStepJob ends a step job that has nothing left to do: it is archived with the
// reason, which its attempt's log and the worker's log line give too.
func skipStepJob(ctx context.Context, p stepJobPayload, why string) error {
	msg := fmt.Sprintf("workflow %q: step job for %s attempt %d ends without effect: %s", p.WorkflowID, p.Step, p.Attempt, why)
	worker.Log(ctx, msg)
	return worker.Skip(msg)
}

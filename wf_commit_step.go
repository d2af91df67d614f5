package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StepJob is a workflow step that runs as a job of its own, as a task's commit (or a
// step job's, for the next attempt) enqueues it: a job of kind "workflow-step:<type>"
// on its queue, partition and rate class, fingerprinted by the step, so the queue's
// fairness, the rate class and quarantine apply to the step rather than to the
// workflow's tasks. The step then waits for that job: only its commit
// (CommitWorkflowStep) records the attempt.
type StepJob struct {
	// Step is the step's key in the run: name and occurrence, "charge#1".
	Step      string
	Queue     string // defaults to QueueDefault
	Partition string
	RateClass string
	Weight    int    // defaults to WeightDefault
	Payload   []byte // what the step job's handler reads (the workflow runtime's)
	// RunAt is when the job is due; zero (or past) is now. A retry's is after its backoff.
	RunAt time.Time
}

// args validates j and returns it as the scripts take it: [step, queue, partition, rate
// class, weight, payload], and the due ms when withAt.
func (j StepJob) args(field string, withAt bool) ([]any, error) {
	if j.Queue == "" {
		j.Queue = QueueDefault
	}
	if j.Weight == 0 {
		j.Weight = WeightDefault
	}
	if err := validateRequired(field+".Step", j.Step, true); err != nil {
		return nil, err
	}
	for _, n := range []struct {
		field, v string
		colonOK  bool
	}{{".Queue", j.Queue, false}, {".Partition", j.Partition, true}, {".RateClass", j.RateClass, true}} {
		if err := validateName(field+n.field, n.v, n.colonOK); err != nil {
			return nil, err
		}
	}
	if j.Weight < 0 || j.Weight > MaxWeight {
		return nil, invalid(field+".Weight", "is %d, outside 0..%d", j.Weight, MaxWeight)
	}
	if len(j.Payload) > MaxPayloadBytes {
		return nil, invalid(field+".Payload", "is %d bytes, more than the %d byte limit", len(j.Payload), MaxPayloadBytes)
	}
	a := []any{j.Step, j.Queue, j.Partition, j.RateClass, strconv.Itoa(j.Weight), string(j.Payload)}
	if withAt {
		a = append(a, strconv.FormatInt(max(j.RunAt.UnixMilli(), 0), 10))
	}
	return a, nil
}

// StepCommit is what one attempt of a step job did, committed by CommitWorkflowStep.
type StepCommit struct {
	WorkflowID string
	// RunID is the run the step job was enqueued in.
	RunID string
	// Step is the step's key ("charge#1").
	Step string
	// Lease is the step job's: the commit is refused unless it is still the holder's.
	Lease LeaseRef
	// Events are the attempt's: step_completed or step_failed; for a failed attempt
	// that is retried, step_failed then the next attempt's step_scheduled.
	Events []Event
	// Retry, for a failed attempt with retries left, is the next attempt's step job
	// (its Step is Step's); nil ends the step.
	Retry *StepJob
}

// StepCommitted is what CommitWorkflowStep did.
type StepCommitted struct {
	// Head is the history's head after the commit (unchanged when the events went to
	// the inbox of a running task).
	Head int64
	// NextTaskID is the workflow task enqueued to run on the step's outcome, or "".
	NextTaskID string
	// RetryJobID is the next attempt's step job, or "".
	RetryJobID string
}

// CommitWorkflowStep applies an attempt of a step job in one script: the job is acked,
// the events are appended (or wait in the inbox while the workflow's task runs), and
// the step either ends (the workflow's next task is enqueued) or waits for c.Retry. It
// is refused with *LeaseRejectedError unless the caller still holds the step job, and
// with *StepNotPendingError unless the step still waits for that job in the workflow's
// open run c.RunID: either way nothing is written, so a stale or duplicate step job
// never appends.
func (s *Store) CommitWorkflowStep(ctx context.Context, c StepCommit) (*StepCommitted, error) {
	if err := validateLease(c.Lease); err != nil {
		return nil, err
	}
	for _, f := range []struct{ field, v string }{{"WorkflowID", c.WorkflowID}, {"RunID", c.RunID}, {"Step", c.Step}} {
		if err := validateRequired(f.field, f.v, true); err != nil {
			return nil, err
		}
	}
	kinds := make([]EventKind, len(c.Events))
	for i, e := range c.Events {
		kinds[i] = e.Kind
	}
	if c.Retry != nil && !slices.Equal(kinds, []EventKind{EventStepFailed, EventStepScheduled}) {
		return nil, invalid("Events", "are %q: with Retry, an attempt commits step_failed then step_scheduled", kinds)
	}
	if c.Retry == nil && !slices.Equal(kinds, []EventKind{EventStepCompleted}) && !slices.Equal(kinds, []EventKind{EventStepFailed}) {
		return nil, invalid("Events", "are %q: without Retry, an attempt commits step_completed or step_failed", kinds)
	}
	retry := ""
	if c.Retry != nil {
		if c.Retry.Step != c.Step {
			return nil, invalid("Retry.Step", "is %q, not the committed step %q", c.Retry.Step, c.Step)
		}
		a, err := c.Retry.args("Retry", true)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(a[1:])
		if err != nil {
			return nil, err
		}
		retry = string(b)
	}
	args := []any{c.WorkflowID, c.RunID, c.Step, c.Lease.JobID, c.Lease.LeaseID, c.Lease.Fence, retry, len(c.Events)}
	for i, e := range c.Events {
		field := fmt.Sprintf("Events[%d]", i)
		if err := validateEvent(field, e); err != nil {
			return nil, err
		}
		if e.Name != c.Step {
			return nil, invalid(field+".Name", "is %q, not the committed step %q", e.Name, c.Step)
		}
		body, err := encodeEvent(e)
		if err != nil {
			return nil, fmt.Errorf("headgate: encode %s: %w", field, err)
		}
		args = append(args, string(e.Kind), body)
	}
	reply, err := s.run(ctx, scriptWfCommitStep, c.WorkflowID, args...)
	var rejected *LeaseRejectedError
	if errors.As(err, &rejected) {
		rejected.JobID = c.Lease.JobID
	}
	var pending *StepNotPendingError
	if errors.As(err, &pending) {
		pending.Step = c.Step
	}
	if err != nil {
		return nil, err
	}
	return &StepCommitted{Head: asInt(reply, 0), NextTaskID: asString(reply, 1), RetryJobID: asString(reply, 2)}, nil
}

// StepNotPendingError: a step job's commit found its step not waiting for that job: the
// run closed or moved on (continue-as-new), or a task gave the step up (the run was
// cancelled while the step waited), or another job's commit ended it. Nothing was
// written; the step job has nothing left to do.
type StepNotPendingError struct {
	WorkflowID string
	Step       string
	// Reason says which: "the run is <status>", "the workflow is on run <id>", "the
	// step waits for no step job" or "the step waits for step job <id>".
	Reason string
}

func (e *StepNotPendingError) Error() string {
	return fmt.Sprintf("headgate: workflow %q: step %s does not wait for this step job: %s", e.WorkflowID, e.Step, e.Reason)
}

// stepNotPending translates the script's reason ("closed:<status>", "run:<id>",
// "step:<job id>").
func stepNotPending(workflowID, why string) error {
	what, v, _ := strings.Cut(why, ":")
	reason := why
	switch {
	case what == "closed":
		reason = "the run is " + v
	case what == "run":
		reason = "the workflow is on run " + v
	case what == "step" && v == "":
		reason = "the step waits for no step job"
	case what == "step":
		reason = "the step waits for step job " + v
	}
	return &StepNotPendingError{WorkflowID: workflowID, Reason: reason}
}

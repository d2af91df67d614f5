package headgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// TaskCommit is what one workflow task did, committed by CommitWorkflowTask in one
// script.
type TaskCommit struct {
	WorkflowID string
	// Lease is the task job's: the commit is refused unless it is still the holder's.
	Lease LeaseRef
	// ExpectedHead is the history's head the task replayed; the commit is refused when
	// the history moved since.
	ExpectedHead int64
	// End ends the task: the events that waited in the inbox are appended after Events
	// and the task job is acked. Without it the commit is a checkpoint: the task keeps
	// running and commits again later.
	End bool
	// NextTask asks for another task after this one ends (a new run after
	// continue-as-new, or work left over); one follows anyway when the inbox held events.
	NextTask bool
	// Events are appended, numbered ExpectedHead+1, ExpectedHead+2, ...
	Events []Event
	// ArmTimers are armed; RetireTimers (timer ids) are retired whatever their arming.
	ArmTimers    []TimerArm
	RetireTimers []string
	// Children are opened (an id that has a history already is left alone), each with
	// its first task.
	Children []WorkflowStart
	// ParentEvent, when the run closes and has a parent, is delivered to the parent
	// (child_completed or child_failed).
	ParentEvent *Event
	// StepJobs are enqueued: steps that run as jobs of their own, each waiting for its
	// job from then on (their RunAt is now).
	StepJobs []StepJob
	// GiveUpSteps are steps (keys) that no longer wait for their step jobs: the jobs are
	// dropped (a running holder is told on the cancel channel, and its commit is
	// refused), and an ending commit leaves out those steps' events that a step job put
	// in the inbox meanwhile.
	GiveUpSteps []string
}

// TimerArm is a timer a task arms.
type TimerArm struct {
	TimerID  string
	FireAt   time.Time
	ArmedSeq int64
}

// TaskCommitted is what CommitWorkflowTask did.
type TaskCommitted struct {
	// Head is the history's head after the commit (inbox events included).
	Head int64
	// NextTaskID is the job id of the task enqueued after this one, or "".
	NextTaskID string
	// StepJobIDs are the job ids of StepJobs, in their order.
	StepJobIDs []string
}

// CommitWorkflowTask applies a workflow task's work in one script. It is refused with
// *LeaseRejectedError unless the caller still holds the task (the job's lease id and
// fence, and the task is the workflow's outstanding one), and with
// *SequenceConflictError when the history's head is not c.ExpectedHead: either way
// nothing is written, so a stale worker can never append.
func (s *Store) CommitWorkflowTask(ctx context.Context, c TaskCommit) (*TaskCommitted, error) {
	if err := validateLease(c.Lease); err != nil {
		return nil, err
	}
	events, err := appendArgs(c.WorkflowID, c.Events, c.ExpectedHead)
	if err != nil {
		return nil, err
	}
	parentKind, parentBody := "", []byte(nil)
	if c.ParentEvent != nil {
		if c.ParentEvent.Kind != EventChildCompleted && c.ParentEvent.Kind != EventChildFailed {
			return nil, invalid("ParentEvent.Kind", "is %q, want child_completed or child_failed", c.ParentEvent.Kind)
		}
		if err := validateEvent("ParentEvent", *c.ParentEvent); err != nil {
			return nil, err
		}
		if parentBody, err = encodeEvent(*c.ParentEvent); err != nil {
			return nil, err
		}
		parentKind = string(c.ParentEvent.Kind)
	}
	arm := make([][3]any, 0, len(c.ArmTimers))
	for i, t := range c.ArmTimers {
		if err := validateTimer(c.WorkflowID, t.TimerID, t.FireAt, t.ArmedSeq); err != nil {
			return nil, fmt.Errorf("ArmTimers[%d]: %w", i, err)
		}
		arm = append(arm, [3]any{t.TimerID, strconv.FormatInt(t.FireAt.UnixMilli(), 10), t.ArmedSeq})
	}
	retire := make([]string, 0, len(c.RetireTimers))
	for i, t := range c.RetireTimers {
		if err := validateRequired(fmt.Sprintf("RetireTimers[%d]", i), t, true); err != nil {
			return nil, err
		}
		retire = append(retire, t)
	}
	children := make([][7]string, 0, len(c.Children))
	for i, ch := range c.Children {
		field := fmt.Sprintf("Children[%d]", i)
		if ch.Queue == "" {
			ch.Queue = QueueDefault
		}
		if err := validateRequired(field+".WorkflowID", ch.WorkflowID, true); err != nil {
			return nil, err
		}
		if err := validateName(field+".Queue", ch.Queue, false); err != nil {
			return nil, err
		}
		if err := validateName(field+".Partition", ch.Partition, true); err != nil {
			return nil, err
		}
		if err := validateVersion(field+".PackageVersion", ch.Queue, ch.PackageVersion); err != nil {
			return nil, err
		}
		started := Event{Seq: 1, Kind: EventWorkflowStarted, WorkflowType: ch.WorkflowType, RunID: ch.RunID,
			ParentWorkflowID: c.WorkflowID, PackageVersion: ch.PackageVersion, Input: ch.Input}
		if err := validateEvent(field, started); err != nil {
			return nil, err
		}
		body, err := encodeEvent(started)
		if err != nil {
			return nil, err
		}
		children = append(children, [7]string{ch.WorkflowID, string(body), ch.WorkflowType, ch.RunID, ch.PackageVersion,
			ch.Queue, ch.Partition})
	}
	steps := make([][]any, 0, len(c.StepJobs))
	for i, j := range c.StepJobs {
		a, err := j.args(fmt.Sprintf("StepJobs[%d]", i), false)
		if err != nil {
			return nil, err
		}
		steps = append(steps, a)
	}
	giveUp := make([]string, 0, len(c.GiveUpSteps))
	for i, step := range c.GiveUpSteps {
		if err := validateRequired(fmt.Sprintf("GiveUpSteps[%d]", i), step, true); err != nil {
			return nil, err
		}
		giveUp = append(giveUp, step)
	}
	lists := make([]any, 5)
	for i, v := range []any{arm, retire, children, steps, giveUp} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		lists[i] = b
	}
	args := []any{c.WorkflowID, c.Lease.JobID, c.Lease.LeaseID, c.Lease.Fence, c.ExpectedHead, flag(c.End), flag(c.NextTask),
		parentKind, parentBody}
	args = append(args, lists...)
	args = append(args, events[2:]...) // n, then the groups (appendArgs leads with id and head)
	reply, err := s.run(ctx, scriptWfCommitTask, c.WorkflowID, args...)
	var rejected *LeaseRejectedError
	if errors.As(err, &rejected) {
		rejected.JobID = c.Lease.JobID
	}
	if err != nil {
		return nil, err
	}
	res := &TaskCommitted{Head: asInt(reply, 0), NextTaskID: asString(reply, 1)}
	for i := range c.StepJobs {
		res.StepJobIDs = append(res.StepJobIDs, asString(reply, 2+i))
	}
	return res, nil
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

package headgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JobEdit is what an operator changes in a job; nil fields stay as they are.
type JobEdit struct {
	Payload     *[]byte
	Priority    *int32
	MaxAttempts *int
	// ScheduledAt: a past time means the store's now, as at an enqueue; for an available
	// job, a future time makes it scheduled.
	ScheduledAt  *time.Time
	PartitionKey *string
	Tags         *[]string
}

// maxSafeInt is the largest integer a script's numbers hold exactly (MAX_SAFE in
// lua/lib.lua); a larger stored count would make the job's data corrupt.
const maxSafeInt = 1<<53 - 1

// The bits of an edit's mask (EDIT_* in lua/lib.lua).
const (
	editPayload = 1 << iota
	editPriority
	editMaxAttempts
	editScheduledAt
	editPartition
	editTags
)

// editArgs is a JobEdit as the scripts take it.
type editArgs struct {
	mask                                                      int
	payload, priority, maxAttempts, partition, tags, schedule string
}

// args validates an edit and returns it as script arguments; a nil edit changes nothing.
func (e *JobEdit) args(field string) (editArgs, error) {
	a := editArgs{priority: "0", maxAttempts: "0", schedule: "0"}
	if e == nil {
		return a, nil
	}
	if e.Payload != nil {
		if len(*e.Payload) > MaxPayloadBytes {
			return a, invalid(field+".Payload", "is %d bytes, more than %d", len(*e.Payload), MaxPayloadBytes)
		}
		a.mask |= editPayload
		a.payload = string(*e.Payload)
	}
	if e.Priority != nil {
		a.mask |= editPriority
		a.priority = fmt.Sprint(*e.Priority)
	}
	if e.MaxAttempts != nil {
		if *e.MaxAttempts < 1 || *e.MaxAttempts > maxSafeInt {
			return a, invalid(field+".MaxAttempts", "is %d, outside 1..%d", *e.MaxAttempts, maxSafeInt)
		}
		a.mask |= editMaxAttempts
		a.maxAttempts = fmt.Sprint(*e.MaxAttempts)
	}
	if e.ScheduledAt != nil {
		if e.ScheduledAt.IsZero() || e.ScheduledAt.UnixMilli() < 0 {
			return a, invalid(field+".ScheduledAt", "is not a time after 1970")
		}
		a.mask |= editScheduledAt
		a.schedule = fmt.Sprint(e.ScheduledAt.UnixMilli())
	}
	if e.PartitionKey != nil {
		if err := validateName(field+".PartitionKey", *e.PartitionKey, true); err != nil {
			return a, err
		}
		a.mask |= editPartition
		a.partition = *e.PartitionKey
	}
	if e.Tags != nil {
		tags, err := canonicalTags(field+".Tags", *e.Tags)
		if err != nil {
			return a, err
		}
		a.mask |= editTags
		a.tags = strings.Join(tags, "\n")
	}
	return a, nil
}

// EditResult is where an edit left the job.
type EditResult struct {
	State       State
	ScheduledAt time.Time
}

// NotEditableError: the job is finished; edit it as part of a retry
// (RetryOptions.Edit). Nothing was written.
type NotEditableError struct {
	JobID string
	State State
}

func (e *NotEditableError) Error() string {
	return fmt.Sprintf("headgate: job %q is %s; edit it as part of a retry (headgate retry %s -payload ..., or RetryOptions.Edit)", e.JobID, e.State, e.JobID)
}

// Edit changes fields of a job that is pending, scheduled, available or retryable, and
// files it again under what changed: an available job moves to its new rank or partition
// (a future ScheduledAt makes it scheduled), a scheduled or retryable job moves to its new
// time. It is refused, with nothing written, with ErrJobNotFound, *JobRunningError,
// *NotEditableError for a finished job, *InvalidError or *CorruptError; a job whose own
// data is corrupt is parked (*JobParkedError).
func (s *Store) Edit(ctx context.Context, id string, edit JobEdit) (EditResult, error) {
	if err := validateRequired("id", id, true); err != nil {
		return EditResult{}, err
	}
	a, err := edit.args("edit")
	if err != nil {
		return EditResult{}, err
	}
	if a.mask == 0 {
		return EditResult{}, invalid("edit", "changes nothing")
	}
	reply, err := s.run(ctx, scriptEdit, id, id, a.mask, a.payload, a.priority, a.maxAttempts, a.schedule, a.partition, a.tags)
	if running := (*JobRunningError)(nil); errors.As(err, &running) {
		running.edit = true // cancelling it first, as for a delete, would leave nothing to edit
	}
	if err != nil {
		return EditResult{}, err
	}
	if err := parked(id, reply); err != nil {
		return EditResult{}, err
	}
	return EditResult{State: State(asString(reply, 0)), ScheduledAt: fromMs(asInt(reply, 1))}, nil
}

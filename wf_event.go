package headgate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EventKind names what an event of a workflow history records.
type EventKind string

// The event vocabulary of a workflow history. The workflow_* kinds move the workflow's
// status (see WorkflowStatus); the others record the work of a run.
const (
	// EventWorkflowStarted opens a run: WorkflowType, Input, RunID, the parent's ids
	// for a child, PackageVersion (the content hash the run is pinned to).
	EventWorkflowStarted EventKind = "workflow_started"
	// EventWorkflowCompleted closes the run with Result.
	EventWorkflowCompleted EventKind = "workflow_completed"
	// EventWorkflowFailed closes the run with Error.
	EventWorkflowFailed EventKind = "workflow_failed"
	// EventWorkflowCancelRequested asks the run to stop (Reason, Operator); the run
	// sees a cancelled context at its next step and closes with EventWorkflowCancelled.
	EventWorkflowCancelRequested EventKind = "workflow_cancel_requested"
	// EventWorkflowCancelled closes a cancelled run.
	EventWorkflowCancelled EventKind = "workflow_cancelled"
	// EventWorkflowTerminated closes the run at once, without running its code.
	EventWorkflowTerminated EventKind = "workflow_terminated"
	// EventWorkflowPaused holds the run's tasks (Reason, Operator).
	EventWorkflowPaused EventKind = "workflow_paused"
	// EventWorkflowResumed releases a paused run (Reason, Operator).
	EventWorkflowResumed EventKind = "workflow_resumed"
	// EventWorkflowContinuedAsNew closes the run and names the next one (RunID, Input):
	// its EventWorkflowStarted follows in the same history.
	EventWorkflowContinuedAsNew EventKind = "workflow_continued_as_new"

	// EventStepScheduled records a step sent to run as a job of its own (Name, Attempt,
	// where the job runs: Queue, Partition, RateClass; FireAt when it is a retry due
	// after its backoff).
	EventStepScheduled EventKind = "step_scheduled"
	// EventStepCompleted memoizes a step's Result (Name, Attempt).
	EventStepCompleted EventKind = "step_completed"
	// EventStepFailed records a step's Error (Name, Attempt); it may be retried.
	EventStepFailed EventKind = "step_failed"
	// EventTimerStarted arms a durable timer (TimerID, FireAt).
	EventTimerStarted EventKind = "timer_started"
	// EventTimerFired records that a timer fired (TimerID, FireAt).
	EventTimerFired EventKind = "timer_fired"
	// EventTimerCancelled records that an armed timer was given up (TimerID).
	EventTimerCancelled EventKind = "timer_cancelled"
	// EventSignalReceived delivers a signal (Name, Payload).
	EventSignalReceived EventKind = "signal_received"
	// EventChildStarted records a child workflow (Name, ChildWorkflowID, ChildRunID,
	// WorkflowType).
	EventChildStarted EventKind = "child_started"
	// EventChildCompleted records a child's Result.
	EventChildCompleted EventKind = "child_completed"
	// EventChildFailed records a child's Error.
	EventChildFailed EventKind = "child_failed"
	// EventMarkerRecorded records a value the code must see again on replay (Name,
	// Payload): a patch decision, the store time, a side effect.
	EventMarkerRecorded EventKind = "marker_recorded"
)

var eventKinds = map[EventKind]bool{
	EventWorkflowStarted: true, EventWorkflowCompleted: true, EventWorkflowFailed: true,
	EventWorkflowCancelRequested: true, EventWorkflowCancelled: true, EventWorkflowTerminated: true,
	EventWorkflowPaused: true, EventWorkflowResumed: true, EventWorkflowContinuedAsNew: true,
	EventStepScheduled: true, EventStepCompleted: true, EventStepFailed: true,
	EventTimerStarted: true, EventTimerFired: true, EventTimerCancelled: true,
	EventSignalReceived: true, EventChildStarted: true, EventChildCompleted: true,
	EventChildFailed: true, EventMarkerRecorded: true,
}

// WorkflowStatus is a workflow's status, derived from its history's workflow_* events
// (the last one decides) and kept in the workflow's row.
type WorkflowStatus string

const (
	WorkflowRunning        WorkflowStatus = "running"
	WorkflowPaused         WorkflowStatus = "paused"
	WorkflowCompleted      WorkflowStatus = "completed"
	WorkflowFailed         WorkflowStatus = "failed"
	WorkflowCancelled      WorkflowStatus = "cancelled"
	WorkflowTerminated     WorkflowStatus = "terminated"
	WorkflowContinuedAsNew WorkflowStatus = "continued_as_new"
)

// statusOf mirrors WF_STATUS_OF in lua/lib.lua: the status an event kind leads to, or ""
// when the kind leaves the status as it is.
var statusOf = map[EventKind]WorkflowStatus{
	EventWorkflowStarted: WorkflowRunning, EventWorkflowResumed: WorkflowRunning,
	EventWorkflowPaused: WorkflowPaused, EventWorkflowCompleted: WorkflowCompleted,
	EventWorkflowFailed: WorkflowFailed, EventWorkflowCancelled: WorkflowCancelled,
	EventWorkflowTerminated: WorkflowTerminated, EventWorkflowContinuedAsNew: WorkflowContinuedAsNew,
}

// StatusFromEvents folds events (in sequence order) into the status they leave a
// workflow in; "" when none of them is a workflow_* event that sets one. The store keeps
// this in the workflow's row as it appends; listings read the row.
func StatusFromEvents(events []Event) WorkflowStatus {
	var st WorkflowStatus
	for _, e := range events {
		if s, ok := statusOf[e.Kind]; ok {
			st = s
		}
	}
	return st
}

// Closed reports whether the status ends a run.
func (s WorkflowStatus) Closed() bool {
	switch s {
	case WorkflowCompleted, WorkflowFailed, WorkflowCancelled, WorkflowTerminated, WorkflowContinuedAsNew:
		return true
	}
	return false
}

var workflowStatuses = map[WorkflowStatus]bool{WorkflowRunning: true, WorkflowPaused: true,
	WorkflowCompleted: true, WorkflowFailed: true, WorkflowCancelled: true, WorkflowTerminated: true,
	WorkflowContinuedAsNew: true}

// WorkflowError is the error a run, a step or a child failed with.
type WorkflowError struct {
	Message string `json:"message"`
	Details []byte `json:"details,omitempty"`
}

// Event is one entry of a workflow history. Seq numbers a history's events 1, 2, ...
// without gaps. RecordedAt is the store time of the append that wrote it when the
// caller leaves it zero. Which other fields an event carries depends on its Kind (see
// the EventKind constants); the store reads only the workflow_started fields, the rest
// is the runtime's.
type Event struct {
	Seq        int64     `json:"-"`
	RecordedAt time.Time `json:"-"`
	Kind       EventKind `json:"kind"`

	WorkflowType     string `json:"type,omitempty"`
	RunID            string `json:"run,omitempty"`
	ParentWorkflowID string `json:"parent,omitempty"`
	ParentRunID      string `json:"parent_run,omitempty"`
	PackageVersion   string `json:"pkg,omitempty"`
	Input            []byte `json:"input,omitempty"`

	Result []byte         `json:"result,omitempty"`
	Error  *WorkflowError `json:"error,omitempty"`

	Reason   string `json:"reason,omitempty"`
	Operator string `json:"operator,omitempty"`

	// Name is a step's, a signal's, a child's or a marker's name.
	Name    string `json:"name,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Payload []byte `json:"payload,omitempty"`

	TimerID string `json:"timer,omitempty"`
	// FireAt is a timer's fire time (ms precision).
	FireAt time.Time `json:"fire_at,omitzero"`

	ChildWorkflowID string `json:"child,omitempty"`
	ChildRunID      string `json:"child_run,omitempty"`

	// Queue, Partition and RateClass are where a scheduled step's job runs.
	Queue     string `json:"queue,omitempty"`
	Partition string `json:"part,omitempty"`
	RateClass string `json:"rc,omitempty"`
}

// MaxAppendEvents is the most events one Append takes.
const MaxAppendEvents = 1000

// validateEvent checks what the store relies on; field names the event, e.g. "events[2]".
func validateEvent(field string, e Event) error {
	if !eventKinds[e.Kind] {
		return invalid(field+".Kind", "%q is not an event kind", e.Kind)
	}
	if !e.RecordedAt.IsZero() && e.RecordedAt.UnixMilli() < 0 {
		return invalid(field+".RecordedAt", "is before 1970")
	}
	names := []struct {
		field, v string
	}{{"RunID", e.RunID}, {"ParentWorkflowID", e.ParentWorkflowID}, {"ParentRunID", e.ParentRunID},
		{"PackageVersion", e.PackageVersion}, {"WorkflowType", e.WorkflowType}, {"TimerID", e.TimerID},
		{"ChildWorkflowID", e.ChildWorkflowID}, {"ChildRunID", e.ChildRunID}, {"Queue", e.Queue},
		{"Partition", e.Partition}, {"RateClass", e.RateClass}}
	for _, n := range names {
		if err := validateName(field+"."+n.field, n.v, true); err != nil {
			return err
		}
	}
	switch e.Kind {
	case EventWorkflowStarted:
		if e.WorkflowType == "" {
			return invalid(field+".WorkflowType", "is empty")
		}
		if e.RunID == "" {
			return invalid(field+".RunID", "is empty")
		}
	case EventTimerStarted, EventTimerFired, EventTimerCancelled:
		if e.TimerID == "" {
			return invalid(field+".TimerID", "is empty")
		}
	}
	size := len(e.Input) + len(e.Result) + len(e.Payload)
	if e.Error != nil {
		size += len(e.Error.Message) + len(e.Error.Details)
	}
	if size > MaxPayloadBytes {
		return invalid(field, "carries %d bytes, more than the %d byte limit", size, MaxPayloadBytes)
	}
	return nil
}

// encodeEvent is an event's body as stored (Seq and RecordedAt live beside it).
func encodeEvent(e Event) ([]byte, error) { return json.Marshal(e) }

// decodeEvent reads a stored history entry "<recorded ms>\n<body>".
func decodeEvent(seq int64, stored string) (Event, error) {
	at, body, ok := strings.Cut(stored, "\n")
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return Event{}, fmt.Errorf("headgate: history entry %d is not \"<ms>\\n<body>\"", seq)
	}
	var e Event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Event{}, fmt.Errorf("headgate: history entry %d: %w", seq, err)
	}
	e.Seq = seq
	e.RecordedAt = time.UnixMilli(ms)
	return e, nil
}

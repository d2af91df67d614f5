package headgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// WorkflowStart is a run to start under a workflow id.
type WorkflowStart struct {
	WorkflowID   string
	WorkflowType string
	// RunID names the run; a random id when empty.
	RunID string
	// Input is the run's input as the runtime encoded it.
	Input []byte
	// PackageVersion is the package version (content hash) the run is pinned to. Empty:
	// the workflow type's package route (PutPackageRoute), and without one the run is
	// unversioned. StartWorkflow refuses a version that is draining (see SetDesiredState)
	// with *VersionDrainingError; a task's children are not refused, as they belong to
	// a run that exists.
	PackageVersion string
	// Queue and Partition route the workflow's tasks (and, by default, its children's):
	// the queue's workers admit them, with the partition's fair share; a run on a
	// version has its tasks on VersionedQueue(Queue, version), which only the workers
	// serving the version admit. Queue defaults to QueueDefault.
	Queue     string
	Partition string
}

// WorkflowStarted is what StartWorkflow did.
type WorkflowStarted struct {
	// RunID is the new run's, or the current run's when the id existed.
	RunID string
	// Started is false when the id had a history already: nothing was written.
	Started bool
	// Status is the existing workflow's status when Started is false.
	Status WorkflowStatus
	// TaskID is the job id of the new run's first task.
	TaskID string
}

// StartWorkflow starts a run under st.WorkflowID, idempotently: an id that has a history
// is left as it is and its current run is reported (Started false), whatever its status.
// A new id gets its workflow_started event, its visibility row and its first task, in one
// script. The run is pinned to st.PackageVersion or the type's route; a version that
// is draining is refused with *VersionDrainingError, and nothing is written.
func (s *Store) StartWorkflow(ctx context.Context, st WorkflowStart) (*WorkflowStarted, error) {
	if st.Queue == "" {
		st.Queue = QueueDefault
	}
	if st.RunID == "" {
		st.RunID = NewRunID()
	}
	if err := validateRequired("WorkflowID", st.WorkflowID, true); err != nil {
		return nil, err
	}
	if err := validateName("Queue", st.Queue, false); err != nil {
		return nil, err
	}
	if err := validateName("Partition", st.Partition, true); err != nil {
		return nil, err
	}
	if err := validateVersion("PackageVersion", st.Queue, st.PackageVersion); err != nil {
		return nil, err
	}
	started := Event{Seq: 1, Kind: EventWorkflowStarted, WorkflowType: st.WorkflowType, RunID: st.RunID,
		PackageVersion: st.PackageVersion, Input: st.Input}
	if err := validateEvent("start", started); err != nil {
		return nil, err
	}
	body, err := encodeEvent(started)
	if err != nil {
		return nil, err
	}
	reply, err := s.run(ctx, scriptWfStart, st.WorkflowID, st.WorkflowID, body, st.WorkflowType, st.RunID,
		st.PackageVersion, st.Queue, st.Partition)
	if err != nil {
		return nil, err
	}
	if asInt(reply, 0) == 0 {
		return &WorkflowStarted{RunID: asString(reply, 1), Status: WorkflowStatus(asString(reply, 2))}, nil
	}
	s.markFormat(ctx) // a history and a task job, which another format would misread
	return &WorkflowStarted{RunID: asString(reply, 1), Started: true, Status: WorkflowRunning, TaskID: asString(reply, 2)}, nil
}

// NewRunID returns a random run id.
func NewRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

package headgate

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// VisibilityRecord is a workflow's visibility row: what operators list and filter on.
// One row per workflow id; a new run's row replaces its predecessor's.
type VisibilityRecord struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	Status       WorkflowStatus
	// StartedAt is the listing's sort key (ms precision); zero records the store time.
	StartedAt        time.Time
	ClosedAt         time.Time // zero while open
	ParentWorkflowID string
	PackageVersion   string
	// Memo is the runtime's own, shown with the row.
	Memo []byte
	// UpdatedAt is the store time of the last upsert (read only).
	UpdatedAt time.Time
}

var visibilityFields = []string{"run", "type", "status", "started", "closed", "parent", "pkg", "memo", "updated"}

// RecordVisibility upserts a workflow's visibility row.
func (s *Store) RecordVisibility(ctx context.Context, r VisibilityRecord) error {
	checks := []struct{ field, v string }{{"WorkflowID", r.WorkflowID}, {"RunID", r.RunID}, {"WorkflowType", r.WorkflowType}}
	for _, c := range checks {
		if err := validateRequired("record."+c.field, c.v, true); err != nil {
			return err
		}
	}
	if err := validateName("record.ParentWorkflowID", r.ParentWorkflowID, true); err != nil {
		return err
	}
	if err := validateName("record.PackageVersion", r.PackageVersion, true); err != nil {
		return err
	}
	if !workflowStatuses[r.Status] {
		return invalid("record.Status", "%q is not a workflow status", r.Status)
	}
	if len(r.Memo) > MaxPayloadBytes {
		return invalid("record.Memo", "is %d bytes, more than the %d byte limit", len(r.Memo), MaxPayloadBytes)
	}
	if r.StartedAt.UnixMilli() < 0 && !r.StartedAt.IsZero() || r.ClosedAt.UnixMilli() < 0 && !r.ClosedAt.IsZero() {
		return invalid("record", "has a time before 1970")
	}
	started := int64(-1)
	if !r.StartedAt.IsZero() {
		started = r.StartedAt.UnixMilli()
	}
	closed := ""
	if !r.ClosedAt.IsZero() {
		closed = strconv.FormatInt(r.ClosedAt.UnixMilli(), 10)
	}
	_, err := s.run(ctx, scriptWfRecordVisibility, r.WorkflowID, r.WorkflowID, r.RunID, r.WorkflowType,
		string(r.Status), started, closed, r.ParentWorkflowID, r.PackageVersion, r.Memo)
	return err
}

// GetVisibility returns a workflow's visibility row, or ErrWorkflowNotFound.
func (s *Store) GetVisibility(ctx context.Context, workflowID string) (*VisibilityRecord, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	v, err := s.rdb.HMGet(ctx, s.keys.Visibility(workflowID), visibilityFields...).Result()
	if err != nil {
		return nil, err
	}
	r := visibilityFromRow(workflowID, v)
	if r == nil {
		return nil, fmt.Errorf("%w: no visibility row for %q", ErrWorkflowNotFound, workflowID)
	}
	return r, nil
}

func visibilityFromRow(id string, v []any) *VisibilityRecord {
	if len(v) != len(visibilityFields) || v[0] == nil {
		return nil
	}
	f := func(i int) string { s, _ := v[i].(string); return s }
	t := func(i int) time.Time {
		ms, err := strconv.ParseInt(f(i), 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	}
	r := &VisibilityRecord{WorkflowID: id, RunID: f(0), WorkflowType: f(1), Status: WorkflowStatus(f(2)),
		StartedAt: t(3), ClosedAt: t(4), ParentWorkflowID: f(5), PackageVersion: f(6), UpdatedAt: t(8)}
	if m := f(7); m != "" {
		r.Memo = []byte(m)
	}
	return r
}

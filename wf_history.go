package headgate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WorkflowSummary is a workflow's row: what the store derived from its history as it
// appended, read without folding the history.
type WorkflowSummary struct {
	WorkflowID string
	// Head is the seq of the history's last event.
	Head int64
	// Status is derived from the workflow_* events; "" while none was appended.
	Status WorkflowStatus
	// WorkflowType, RunID, ParentWorkflowID, ParentRunID and PackageVersion are the
	// latest run's, from its workflow_started event.
	WorkflowType     string
	RunID            string
	ParentWorkflowID string
	ParentRunID      string
	PackageVersion   string
	// StartedAt is the recorded time of the first workflow_started event; zero while
	// there is none (such a workflow is in no Query).
	StartedAt time.Time
	// ClosedAt is when the latest run closed; zero while it is open.
	ClosedAt time.Time
	// UpdatedAt is the store time of the last append.
	UpdatedAt time.Time
	// RunStartSeq is the seq of the current run's workflow_started event, for workflows
	// the runtime started (0 for histories written with Append alone).
	RunStartSeq int64
	// Queue is the queue the workflow was started on ("" for histories written with
	// Append alone); its tasks go on VersionedQueue(Queue, PackageVersion).
	Queue string
}

var workflowRowFields = []string{"head", "status", "type", "run", "parent", "prun", "pkg", "started", "closed", "updated", "runseq", "queue"}

func summaryFromRow(id string, v []any) *WorkflowSummary {
	if len(v) != len(workflowRowFields) || v[0] == nil {
		return nil
	}
	f := func(i int) string { s, _ := v[i].(string); return s }
	n := func(i int) int64 { x, _ := strconv.ParseInt(f(i), 10, 64); return x }
	t := func(i int) time.Time {
		if f(i) == "" {
			return time.Time{}
		}
		return time.UnixMilli(n(i))
	}
	return &WorkflowSummary{WorkflowID: id, Head: n(0), Status: WorkflowStatus(f(1)), WorkflowType: f(2),
		RunID: f(3), ParentWorkflowID: f(4), ParentRunID: f(5), PackageVersion: f(6), StartedAt: t(7),
		ClosedAt: t(8), UpdatedAt: t(9), RunStartSeq: n(10), Queue: f(11)}
}

// GetWorkflow returns a workflow's row, or ErrWorkflowNotFound when it has no history.
func (s *Store) GetWorkflow(ctx context.Context, workflowID string) (*WorkflowSummary, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	v, err := s.rdb.HMGet(ctx, s.keys.Workflow(workflowID), workflowRowFields...).Result()
	if err != nil {
		return nil, err
	}
	w := summaryFromRow(workflowID, v)
	if w == nil {
		return nil, fmt.Errorf("%w: %q", ErrWorkflowNotFound, workflowID)
	}
	return w, nil
}

// ReadHistoryFrom returns up to limit events of a workflow's history from seq fromSeq
// on (1 is the first), in sequence order, and the seq to read from next (0 when the
// history ends within this page). An unknown workflow has an empty history. limit
// defaults to 100 (0) and is at most 1,000.
func (s *Store) ReadHistoryFrom(ctx context.Context, workflowID string, fromSeq int64, limit int) ([]Event, int64, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, 0, err
	}
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, 0, err
	}
	if fromSeq < 1 {
		fromSeq = 1
	}
	fields := make([]string, limit+1)
	for i := range fields {
		fields[i] = strconv.FormatInt(fromSeq+int64(i), 10)
	}
	v, err := s.rdb.HMGet(ctx, s.keys.WorkflowHistory(workflowID), fields...).Result()
	if err != nil {
		return nil, 0, err
	}
	var out []Event
	for i, x := range v[:limit] {
		stored, ok := x.(string)
		if !ok {
			return out, 0, nil
		}
		e, err := decodeEvent(fromSeq+int64(i), stored)
		if err != nil {
			return nil, 0, fmt.Errorf("headgate: workflow %q: %w", workflowID, err)
		}
		out = append(out, e)
	}
	if v[limit] == nil {
		return out, 0, nil
	}
	return out, fromSeq + int64(limit), nil
}

// ReadHistory returns a workflow's whole history in sequence order, reading it a page
// (1,000 events) per round trip. An unknown workflow has an empty history.
func (s *Store) ReadHistory(ctx context.Context, workflowID string) ([]Event, error) {
	var all []Event
	for from := int64(1); from != 0; {
		page, next, err := s.ReadHistoryFrom(ctx, workflowID, from, maxPage)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		from = next
	}
	return all, nil
}

// RunSummary is one run of a workflow id's chain.
type RunSummary struct {
	RunID     string
	Status    WorkflowStatus
	StartedAt time.Time
	ClosedAt  time.Time // zero while the run is open
}

// ReadRunChain returns the runs of a workflow id in start order: each workflow_started
// event opens one, and the workflow_* events after it set its status (a
// continue-as-new closes it as continued_as_new and the next started event opens its
// successor). It reads the chain kept by Append, a page of 1,000 runs per round trip.
func (s *Store) ReadRunChain(ctx context.Context, workflowID string) ([]RunSummary, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	var out []RunSummary
	for from := int64(0); ; from += maxPage {
		page, err := s.rdb.LRange(ctx, s.keys.WorkflowRuns(workflowID), from, from+maxPage-1).Result()
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			p := strings.Split(r, memberSep)
			if len(p) != 4 {
				return nil, fmt.Errorf("headgate: workflow %q: run chain entry %q is malformed", workflowID, r)
			}
			rs := RunSummary{RunID: p[0], Status: WorkflowStatus(p[1])}
			if ms, err := strconv.ParseInt(p[2], 10, 64); err == nil {
				rs.StartedAt = time.UnixMilli(ms)
			}
			if ms, err := strconv.ParseInt(p[3], 10, 64); err == nil {
				rs.ClosedAt = time.UnixMilli(ms)
			}
			out = append(out, rs)
		}
		if len(page) < maxPage {
			return out, nil
		}
	}
}

// maxPage is the largest page a listing returns; pageDefault is a page when the caller
// names no size.
const (
	maxPage     = 1000
	pageDefault = 100
)

func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return pageDefault, nil
	case limit < 0 || limit > maxPage:
		return 0, invalid("limit", "is %d, outside 1..%d", limit, maxPage)
	}
	return limit, nil
}

// rowsOf reads the rows of ids in one round trip, in the order of ids; ids without a
// row are left out.
func (s *Store) rowsOf(ctx context.Context, ids []string) ([]*WorkflowSummary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.Workflow(id), workflowRowFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*WorkflowSummary, 0, len(ids))
	for i, id := range ids {
		if w := summaryFromRow(id, cmds[i].Val()); w != nil {
			out = append(out, w)
		}
	}
	return out, nil
}

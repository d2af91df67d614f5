package headgate

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// WorkflowListRequest filters and pages ListWorkflows; zero filters select everything.
type WorkflowListRequest struct {
	WorkflowType string
	Status       WorkflowStatus
	// StartedAfter and StartedBefore bound StartedAt, both inclusive (ms precision).
	StartedAfter  time.Time
	StartedBefore time.Time
	Parent        string
	// PageSize defaults to 100 (0) and is at most 1,000.
	PageSize int
	// PageToken continues a listing: the NextPageToken of the previous page.
	PageToken string
}

// VisibilityPage is one page of ListWorkflows.
type VisibilityPage struct {
	Records []*VisibilityRecord
	// NextPageToken is "" when the listing is done.
	NextPageToken string
}

// ListWorkflows returns a page of visibility rows that match the request, ordered by
// StartedAt, then workflow id. Rows with equal StartedAt are told apart by id, so pages
// never skip or repeat a row that keeps its sort key; a row upserted with a new
// StartedAt during a listing may be seen at both places or at neither. A PageToken that
// is not one this ordering printed is *InvalidError of "cursor", and nothing is read.
func (s *Store) ListWorkflows(ctx context.Context, req WorkflowListRequest) (*VisibilityPage, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if err := validateWorkflowFilter(req.WorkflowType, req.Status, req.Parent, req.StartedAfter, req.StartedBefore); err != nil {
		return nil, err
	}
	if err := checkStartedCursor(req.PageToken); err != nil {
		return nil, err
	}
	lo, hi := startedBounds(req.StartedAfter, req.StartedBefore)
	key := s.keys.VisibilityIndex(listingSelection(req.WorkflowType, string(req.Status), req.Parent))
	members, next, err := s.lexPage(ctx, key, lo, hi, req.PageToken, req.PageSize)
	if err != nil {
		return nil, err
	}
	page := &VisibilityPage{NextPageToken: next}
	if len(members) == 0 {
		return page, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(members))
	for i, m := range members {
		cmds[i] = pipe.HMGet(ctx, s.keys.Visibility(idOfMember(m)), visibilityFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, m := range members {
		r := visibilityFromRow(idOfMember(m), cmds[i].Val())
		if r == nil {
			continue // removed since the index was read
		}
		if (req.WorkflowType == "" || r.WorkflowType == req.WorkflowType) && (req.Status == "" || r.Status == req.Status) &&
			(req.Parent == "" || r.ParentWorkflowID == req.Parent) {
			page.Records = append(page.Records, r)
		}
	}
	return page, nil
}

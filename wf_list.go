package headgate

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// lexPage reads one page of a ZSET whose members all score 0, in member order, within
// the lex bounds lo..hi ("-", "+", "[x" or "(x"), after cursor (a cursor lexPage
// returned; "" = from lo). next is "" when the range ends within the page.
func (s *Store) lexPage(ctx context.Context, key, lo, hi, cursor string, limit int) ([]string, string, error) {
	return lexPage(ctx, s.rdb, key, lo, hi, cursor, limit)
}

func lexPage(ctx context.Context, rdb redis.UniversalClient, key, lo, hi, cursor string, limit int) ([]string, string, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, "", err
	}
	if cursor != "" {
		last, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
		if err != nil || len(last) == 0 {
			return nil, "", invalid("cursor", "%q is not a cursor of this listing", cursor)
		}
		if after := "(" + string(last); lo == "-" || after[1:] >= lo[1:] {
			lo = after
		}
	}
	// ZRANGE ... BYLEX rather than ZRANGEBYLEX: the least-privilege ACL (acl.go) grants
	// ZRANGE, which the scripts need anyway.
	members, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: lo, Stop: hi, ByLex: true, Count: int64(limit + 1)}).Result()
	if err != nil {
		return nil, "", err
	}
	if len(members) <= limit {
		return members, "", nil
	}
	members = members[:limit]
	return members, base64.RawURLEncoding.EncodeToString([]byte(members[limit-1])), nil
}

// checkStartedCursor refuses a cursor that is not a position of a listing ordered by
// start time and id (Query, ListWorkflows): "<15-digit ms>" memberSep "<id>",
// base64url-encoded. Taken as a position, any other string would page from somewhere
// unrelated, past every row for most, and the listing would read as empty.
func checkStartedCursor(cursor string) error {
	if cursor == "" {
		return nil
	}
	last, err := base64.RawURLEncoding.DecodeString(cursor)
	ms, id, ok := strings.Cut(string(last), memberSep)
	if err != nil || !ok || id == "" || len(ms) < len(padMs(0)) || strings.Trim(ms, "0123456789") != "" {
		return invalid("cursor", "%q is not a cursor of this listing", cursor)
	}
	return nil
}

// checkNameCursor refuses a cursor that is not a position of a listing in name order
// (ListWorkerDeployments): a name, base64url-encoded. Taken as a position, any other
// string would page from somewhere unrelated and the listing would read as empty.
func checkNameCursor(cursor string) error {
	if cursor == "" {
		return nil
	}
	last, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(last) == 0 || validateName("cursor", string(last), true) != nil {
		return invalid("cursor", "%q is not a cursor of this listing", cursor)
	}
	return nil
}

// idOfMember is the id part of a "<sort key>\x1f<id>" member.
func idOfMember(m string) string {
	_, id, _ := strings.Cut(m, memberSep)
	return id
}

// ListWorkflowIDs returns a page of the ids of every workflow with a history, running
// or closed, in id order, and the cursor of the next page ("" at the end).
func (s *Store) ListWorkflowIDs(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return s.lexPage(ctx, s.keys.WorkflowIDs(), "-", "+", cursor, limit)
}

// StreamHead is a workflow id with the seq of its history's last event.
type StreamHead struct {
	WorkflowID string
	Head       int64
}

// StreamHeads returns a page of every workflow's head, in workflow id order, from the
// workflows' rows.
func (s *Store) StreamHeads(ctx context.Context, cursor string, limit int) ([]StreamHead, string, error) {
	ids, next, err := s.ListWorkflowIDs(ctx, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.rowsOf(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	out := make([]StreamHead, len(rows))
	for i, w := range rows {
		out[i] = StreamHead{WorkflowID: w.WorkflowID, Head: w.Head}
	}
	return out, next, nil
}

// ListActive returns a page of the running workflows' ids, in id order. A paused
// workflow is not active (see ListPaused); closed ones are in neither.
func (s *Store) ListActive(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return s.lexPage(ctx, s.keys.WorkflowsInStatus(string(WorkflowRunning)), "-", "+", cursor, limit)
}

// ListPaused returns a page of the paused workflows' ids, in id order.
func (s *Store) ListPaused(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return s.lexPage(ctx, s.keys.WorkflowsInStatus(string(WorkflowPaused)), "-", "+", cursor, limit)
}

// WorkflowFilter selects workflows for Query; zero fields select everything.
type WorkflowFilter struct {
	WorkflowType string
	Status       WorkflowStatus
	// StartedAfter and StartedBefore bound StartedAt, both inclusive (ms precision).
	StartedAfter  time.Time
	StartedBefore time.Time
	// Parent selects the children of a workflow id.
	Parent string
}

func (f WorkflowFilter) matches(w *WorkflowSummary) bool {
	return (f.WorkflowType == "" || w.WorkflowType == f.WorkflowType) &&
		(f.Status == "" || w.Status == f.Status) &&
		(f.Parent == "" || w.ParentWorkflowID == f.Parent) &&
		(f.StartedAfter.IsZero() || !w.StartedAt.Before(f.StartedAfter.Truncate(time.Millisecond))) &&
		(f.StartedBefore.IsZero() || !w.StartedAt.After(f.StartedBefore))
}

// selection picks the index a listing reads, most selective first, and the lex bounds
// of the filter's start times; filters the index does not apply are checked per row.
func listingSelection(typ, status, parent string) string {
	switch {
	case parent != "":
		return "parent:" + parent
	case typ != "" && status != "":
		return "ts:" + status + ":" + typ
	case typ != "":
		return "type:" + typ
	case status != "":
		return "status:" + status
	}
	return "all"
}

func startedBounds(after, before time.Time) (string, string) {
	lo, hi := "-", "+"
	if !after.IsZero() {
		lo = "[" + padMs(after.UnixMilli())
	}
	if !before.IsZero() {
		hi = "(" + padMs(before.UnixMilli()+1)
	}
	return lo, hi
}

// padMs mirrors pad_ms in lua/lib.lua.
func padMs(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	s := strconv.FormatInt(ms, 10)
	return strings.Repeat("0", max(0, 15-len(s))) + s
}

func validateWorkflowFilter(typ string, status WorkflowStatus, parent string, after, before time.Time) error {
	if err := validateName("filter.WorkflowType", typ, true); err != nil {
		return err
	}
	if err := validateName("filter.Parent", parent, true); err != nil {
		return err
	}
	if status != "" && !workflowStatuses[status] {
		return invalid("filter.Status", "%q is not a workflow status", status)
	}
	if !after.IsZero() && !before.IsZero() && before.Before(after) {
		return invalid("filter.StartedBefore", "is before StartedAfter")
	}
	return nil
}

// Query returns a page of the started workflows that match filter, ordered by StartedAt,
// then workflow id, and the cursor of the next page ("" at the end). A page may hold
// fewer than limit rows while a next cursor remains, when a filter beyond the index the
// query reads (type + status, or a parent) leaves rows out. A cursor that is not one
// this ordering printed is *InvalidError of "cursor", and nothing is read.
func (s *Store) Query(ctx context.Context, filter WorkflowFilter, cursor string, limit int) ([]*WorkflowSummary, string, error) {
	if err := validateWorkflowFilter(filter.WorkflowType, filter.Status, filter.Parent, filter.StartedAfter, filter.StartedBefore); err != nil {
		return nil, "", err
	}
	if err := checkStartedCursor(cursor); err != nil {
		return nil, "", err
	}
	lo, hi := startedBounds(filter.StartedAfter, filter.StartedBefore)
	key := s.keys.WorkflowQuery(listingSelection(filter.WorkflowType, string(filter.Status), filter.Parent))
	members, next, err := s.lexPage(ctx, key, lo, hi, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = idOfMember(m)
	}
	rows, err := s.rowsOf(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	out := rows[:0]
	for _, w := range rows {
		if filter.matches(w) {
			out = append(out, w)
		}
	}
	return out, next, nil
}

package headgate

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StateHeld names, in a JobFilter and in counts, the available jobs held back because
// their fingerprint is quarantined. It is not a state a job has: a held job's State is
// StateAvailable and its Held is true.
const StateHeld State = "held"

// JobFilter selects the jobs of one queue in one state. Empty fields match any value.
type JobFilter struct {
	Queue string // required
	State State  // required: a job state, or StateHeld
	Kind  string
	// Partition, Tag and Fingerprint each have an index: one of them costs a page what
	// no filter costs. With two or more, the index of the first set (Fingerprint, then
	// Partition, then Tag) is walked and the others are checked on each job, so a page
	// looks at a bounded number of jobs and may come back short, even empty, with a
	// next cursor.
	Partition   string
	Tag         string
	Fingerprint string
	// OlderThan keeps the jobs that entered the state at least this long ago on the
	// store's clock; 0 = any age.
	OlderThan time.Duration
}

// Page asks for one page of a listing.
type Page struct {
	// Limit is the most jobs the page holds. Defaults to ListLimitDefault, at most
	// ListLimitMax.
	Limit int
	// Oldest lists the jobs that entered the state first at the top; the default is
	// newest first.
	Oldest bool
	// Cursor continues a listing: the Next of the previous page, with the same filter
	// and order ("" = from the start). A cursor carries a digest of its filter and
	// order, and is refused with another.
	Cursor string
}

// Defaults and bounds of Page.Limit.
const (
	ListLimitDefault = 50
	ListLimitMax     = 1000
)

// JobPage is one page of a listing.
type JobPage struct {
	// Jobs are in the order asked for: by the store time at which each entered the
	// state, then by id.
	Jobs []*Job
	// Next is the cursor of the following page; "" when the listing is done.
	Next string
}

// ListJobs returns one page of the jobs that match f, from the job indexes the
// transitions keep: a page costs O(log N + Limit) for each of the queue's kinds (one,
// when f.Kind is set), whatever the queue's size. A cursor is a position in the order
// (entry time, id), not a job, so a listing neither skips nor repeats a job that stays
// in the state while others move; a job that leaves and comes back to the state
// re-enters at its new time.
//
// Bad input (no queue, an unknown state, a limit outside 1..ListLimitMax, a cursor
// ListJobs did not return for this order) is an *InvalidError; a cursor of another
// filter is a *CursorFilterError (which is also an *InvalidError): its position in that
// filter's jobs would skip this filter's jobs before it. An index of the wrong type is a
// *CorruptError.
func (s *Store) ListJobs(ctx context.Context, f JobFilter, p Page) (*JobPage, error) {
	sel, err := s.selection(f, p.Limit, p.Oldest, p.Cursor, p.Limit)
	if err != nil {
		return nil, err
	}
	reply, err := s.run(ctx, scriptListJobs, "", sel...)
	if err != nil {
		return nil, err
	}
	page := &JobPage{Next: nextCursor(p.Oldest, f, reply)}
	for i := 3; i+2 < len(reply); i += 3 {
		id := asString(reply, i)
		h := hashFromReply(reply[i+1])
		if len(h) == 0 {
			continue
		}
		j := jobFromHash(id, h, nil)
		if exp := asString(reply, i+2); exp != "" && j.State == StateRunning {
			if v, err := strconv.ParseFloat(exp, 64); err == nil {
				j.LeaseExpiresAt = time.UnixMilli(int64(v))
			}
		}
		page.Jobs = append(page.Jobs, j)
	}
	return page, nil
}

// Filter dimensions of the job filter indexes (DIM_* in lua/lib.lua).
const (
	dimPartition   = "p"
	dimTag         = "t"
	dimFingerprint = "f"
)

// selection validates a filter, an order and a cursor and returns them as the ARGV of an
// index-walking script (index_selection in lua/lib.lua). limit is the most matches a
// call returns, budget the most index entries it looks at.
func (s *Store) selection(f JobFilter, limit int, oldest bool, cursor string, budget int) ([]any, error) {
	if err := validateRequired("Queue", f.Queue, false); err != nil {
		return nil, err
	}
	if !slices.Contains(States, f.State) && f.State != StateHeld {
		return nil, invalid("State", "%q is not one of %s", f.State, stateList())
	}
	for _, v := range []struct{ field, v string }{{"Kind", f.Kind}, {"Partition", f.Partition},
		{"Tag", f.Tag}, {"Fingerprint", f.Fingerprint}} {
		if err := validateName(v.field, v.v, true); err != nil {
			return nil, err
		}
	}
	if f.OlderThan < 0 {
		return nil, invalid("OlderThan", "is negative")
	}
	switch {
	case limit == 0:
		limit = ListLimitDefault
	case limit < 0 || limit > ListLimitMax:
		return nil, invalid("Limit", "is %d, outside 1..%d", limit, ListLimitMax)
	}
	if budget < limit {
		budget = limit
	}
	checks := 0
	for _, v := range []string{f.Partition, f.Tag, f.Fingerprint} {
		if v != "" {
			checks++
		}
	}
	metaTag := strings.HasPrefix(f.Tag, MetaTagPrefix) // no index: checked on each job
	if checks > 1 || metaTag {
		budget = ListLimitMax
	}
	dim, value := "", ""
	switch {
	case f.Fingerprint != "":
		dim, value = dimFingerprint, f.Fingerprint
	case f.Partition != "":
		dim, value = dimPartition, f.Partition
	case f.Tag != "" && !metaTag:
		dim, value = dimTag, f.Tag
	}
	// The walked dimension needs no check; the others do.
	part, tag, fp := f.Partition, f.Tag, f.Fingerprint
	switch dim {
	case dimFingerprint:
		fp = ""
	case dimPartition:
		part = ""
	case dimTag:
		tag = ""
	}
	at, id := "", ""
	if cursor != "" {
		var err error
		if at, id, err = parseCursor(cursor, oldest, f); err != nil {
			return nil, err
		}
	}
	order := "desc"
	if oldest {
		order = "asc"
	}
	olderThan := ""
	if f.OlderThan > 0 {
		olderThan = strconv.FormatInt(ms(f.OlderThan), 10)
	}
	return []any{f.Queue, string(f.State), f.Kind, dim, value, order, limit, budget, at, id, olderThan,
		part, tag, fp}, nil
}

func stateList() string {
	names := make([]string, 0, len(States)+1)
	for _, st := range States {
		names = append(names, string(st))
	}
	return strings.Join(append(names, string(StateHeld)), ", ")
}

// A cursor is "A" (oldest first) or "D" (newest first), the digest of the filter it was
// made for, the entry time in ms, memberSep and the id, base64url-encoded: opaque to
// callers, and refused with the other order or another filter. A cursor in lower case
// ("a", "d") is of the format before the digest: it is taken with any filter, so that a
// listing paged across an upgrade goes on.
func encodeCursor(oldest bool, f JobFilter, at, id string) string {
	o := "D"
	if oldest {
		o = "A"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(o + f.digest() + at + memberSep + id))
}

func parseCursor(c string, oldest bool, f JobFilter) (at, id string, err error) {
	bad := invalid("Cursor", "%q is not a cursor of this listing's order", c)
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	if derr != nil || len(raw) < 2 {
		return "", "", bad
	}
	o, rest := raw[0], string(raw[1:])
	if o == 'A' || o == 'D' {
		digest, tail, ok := cutDigest(rest)
		if !ok {
			return "", "", bad
		}
		if digest != f.digest() {
			if (o == 'A') == oldest {
				return "", "", &CursorFilterError{Filter: f}
			}
			return "", "", bad
		}
		o, rest = o+'a'-'A', tail
	}
	if (o == 'a') != oldest || (o != 'a' && o != 'd') {
		return "", "", bad
	}
	at, id, ok := strings.Cut(rest, memberSep)
	if _, perr := strconv.ParseUint(at, 10, 63); !ok || perr != nil || id == "" {
		return "", "", bad
	}
	return at, id, nil
}

// digestLen is the length of a filter's digest in a cursor: 8 hex digits tell a filter
// from another that a cursor was mistakenly given with, which is all they are for.
const digestLen = 8

// digest is a short hash of every field of the filter, which a cursor carries so that a
// position in one filter's order is not taken for one in another's.
func (f JobFilter) digest() string {
	h := fnv.New32a()
	for _, v := range []string{f.Queue, string(f.State), f.Kind, f.Partition, f.Tag, f.Fingerprint,
		strconv.FormatInt(int64(f.OlderThan), 10)} {
		h.Write([]byte(v + memberSep))
	}
	return fmt.Sprintf("%0*x", digestLen, h.Sum32())
}

// cutDigest splits a cursor's digest from the rest of it.
func cutDigest(s string) (digest, rest string, ok bool) {
	if len(s) < digestLen {
		return "", "", false
	}
	for _, c := range s[:digestLen] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", "", false
		}
	}
	return s[:digestLen], s[digestLen:], true
}

// describe names the filter's fields that are set, for an error.
func (f JobFilter) describe() string {
	parts := []string{fmt.Sprintf("queue %q", f.Queue), fmt.Sprintf("state %q", f.State)}
	for _, v := range []struct{ name, v string }{{"kind", f.Kind}, {"partition", f.Partition}, {"tag", f.Tag},
		{"fingerprint", f.Fingerprint}} {
		if v.v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", v.name, v.v))
		}
	}
	if f.OlderThan != 0 {
		parts = append(parts, "older than "+f.OlderThan.String())
	}
	return strings.Join(parts, ", ")
}

// nextCursor reads {next time, next id, done} at the start of an index-walking reply.
func nextCursor(oldest bool, f JobFilter, reply []any) string {
	if asInt(reply, 2) == 1 || asString(reply, 1) == "" {
		return ""
	}
	return encodeCursor(oldest, f, asString(reply, 0), asString(reply, 1))
}

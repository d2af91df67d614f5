package headgate

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ListOptions filters and pages ListJobs.
type ListOptions struct {
	Queue string // "" = any
	State State  // "" = any
	Kind  string // "" = any
	// Cursor continues a listing: the cursor ListJobs returned for the previous page
	// ("" = from the start).
	Cursor string
	// Limit is about how many keys a page reads (SCAN's COUNT). Defaults to 100, at
	// most 1,000.
	Limit int
}

// ListJobs returns a page of the jobs that match opts and the cursor of the next page
// ("" when the listing is done). Pages follow a SCAN of the server that holds the
// namespace, in no particular order; each call reads a bounded part of that server's
// key space, so a page with sparse matches may be short, even empty, and still have a
// next cursor. A job enqueued or deleted during a listing may or may not appear; a job
// present throughout appears at least once. Keeping no index of all jobs spares every
// enqueue and delete a write; listing is the operator's path, not the workers'.
func (s *Store) ListJobs(ctx context.Context, opts ListOptions) ([]*Job, string, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > 1000:
		return nil, "", invalid("Limit", "is %d, outside 1..1000", limit)
	}
	var cursor uint64
	if opts.Cursor != "" {
		c, err := strconv.ParseUint(opts.Cursor, 10, 64)
		if err != nil {
			return nil, "", invalid("Cursor", "%q is not a cursor ListJobs returned", opts.Cursor)
		}
		cursor = c
	}
	node, err := s.node(ctx)
	if err != nil {
		return nil, "", err
	}
	pattern, idAt := s.keys.JobPattern()
	keys, next, err := node.Scan(ctx, cursor, pattern, int64(limit)).Result()
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k[idAt:]
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	exps := make([]*redis.FloatCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.keys.Job(id))
		exps[i] = pipe.ZScore(ctx, s.keys.Leases(), id)
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, "", err
		}
	}
	var out []*Job
	for i, id := range ids {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue
		}
		j := withLease(jobFromHash(id, h), exps[i])
		if (opts.Queue == "" || j.Queue == opts.Queue) && (opts.State == "" || j.State == opts.State) &&
			(opts.Kind == "" || j.Kind == opts.Kind) {
			out = append(out, j)
		}
	}
	nextCursor := ""
	if next != 0 {
		nextCursor = strconv.FormatUint(next, 10)
	}
	return out, nextCursor, nil
}

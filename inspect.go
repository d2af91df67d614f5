package headgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

// GetJob returns the stored job, or ErrJobNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (*Job, error) {
	pipe := s.rdb.Pipeline()
	h := pipe.HGetAll(ctx, s.keys.Job(id))
	exp := pipe.ZScore(ctx, s.keys.Leases(), id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if len(h.Val()) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return withLease(jobFromHash(id, h.Val()), exp), nil
}

// JobErrors returns the job's error and attempt-log history, oldest first.
func (s *Store) JobErrors(ctx context.Context, id string) ([]string, error) {
	return s.rdb.LRange(ctx, s.keys.Errors(id), 0, -1).Result()
}

// JobResult returns a completed job's result, or nil when it has none.
func (s *Store) JobResult(ctx context.Context, id string) (*StoredBlob, error) {
	return s.getBlob(ctx, s.keys.Result(id))
}

// JobOutput returns the job's latest output, or nil when it has none.
func (s *Store) JobOutput(ctx context.Context, id string) (*StoredBlob, error) {
	return s.getBlob(ctx, s.keys.Output(id))
}

func (s *Store) getBlob(ctx context.Context, key string) (*StoredBlob, error) {
	h, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &StoredBlob{
		Blob:      Blob{SchemaVersion: atoi(h["schema"]), Bytes: []byte(h["bytes"])},
		Fence:     int64(atoi(h["fence"])),
		UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// JobProgress returns the job's latest progress, or nil when it has none.
func (s *Store) JobProgress(ctx context.Context, id string) (*Progress, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.Progress(id)).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	return &Progress{
		Current: int64(atoi(h["current"])), Total: int64(atoi(h["total"])), Message: h["message"],
		Fence: int64(atoi(h["fence"])), UpdatedAt: time.UnixMilli(int64(atoi(h["at"]))),
	}, nil
}

// withLease sets a running job's lease expiry from its entry in the leases ZSET.
func withLease(j *Job, exp *redis.FloatCmd) *Job {
	if v, err := exp.Result(); err == nil && j.State == StateRunning {
		j.LeaseExpiresAt = time.UnixMilli(int64(v))
	}
	return j
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

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

// node returns the client of the server holding the namespace: on a cluster, the master
// of its slot, so that SCAN walks the right key space.
func (s *Store) node(ctx context.Context) (redis.UniversalClient, error) {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, s.keys.Prefix())
	}
	return s.rdb, nil
}

// QueueStats is a queue's state at one moment.
type QueueStats struct {
	Queue  string
	Counts map[State]int64
	// Unfinished counts jobs not yet terminal (what an enqueue limit bounds).
	Unfinished int64
	// Limit is the queue's enqueue limit; nil when unbounded.
	Limit  *int64
	Paused bool
}

// QueueStats returns the stats of every queue that has had a job or a setting, by name.
func (s *Store) QueueStats(ctx context.Context) ([]QueueStats, error) {
	queues, err := s.rdb.SMembers(ctx, s.keys.Queues()).Result()
	if err != nil {
		return nil, err
	}
	limits, err := s.rdb.HGetAll(ctx, s.keys.Limits()).Result()
	if err != nil {
		return nil, err
	}
	paused, err := s.rdb.SMembers(ctx, s.keys.Paused()).Result()
	if err != nil {
		return nil, err
	}
	for q := range limits {
		queues = append(queues, q)
	}
	queues = append(queues, paused...)
	slices.Sort(queues)
	queues = slices.Compact(queues)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.HGetAll(ctx, s.keys.Counts(q))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]QueueStats, len(queues))
	for i, q := range queues {
		st := QueueStats{Queue: q, Counts: map[State]int64{}, Paused: slices.Contains(paused, q)}
		for f, v := range cmds[i].Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			if n == 0 {
				continue
			}
			st.Counts[State(f)] = n
			if !State(f).Terminal() {
				st.Unfinished += n
			}
		}
		if v, ok := limits[q]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			st.Limit = &n
		}
		out[i] = st
	}
	return out, nil
}

// Cancel moves an unfinished job to cancelled. A running holder's later ack is
// rejected. Returns ErrJobNotFound or *NotCancellableError when it cannot.
func (s *Store) Cancel(ctx context.Context, id string) error {
	if err := validateRequired("id", id, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptCancel, id, id)
	return err
}

// ReleasePending releases staged jobs to scheduled or available and returns the ids
// that were not pending (left unchanged).
func (s *Store) ReleasePending(ctx context.Context, ids ...string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > MaxBatch {
		return nil, invalid("ids", "%d ids is more than %d", len(ids), MaxBatch)
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		if err := validateRequired(fmt.Sprintf("ids[%d]", i), id, true); err != nil {
			return nil, err
		}
		args[i] = id
	}
	reply, err := s.run(ctx, scriptReleasePending, "", args...)
	if err != nil {
		return nil, err
	}
	left := make([]string, len(reply))
	for i := range reply {
		left[i] = asString(reply, i)
	}
	return left, nil
}

// SetEnqueueLimit bounds the queue's unfinished jobs: enqueues that would pass limit are
// refused with *BackpressureError. Lowering it below the current depth refuses new work
// until jobs finish.
func (s *Store) SetEnqueueLimit(ctx context.Context, queue string, limit int64) error {
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	if limit < 0 {
		return invalid("limit", "cannot be negative (%d)", limit)
	}
	return s.rdb.HSet(ctx, s.keys.Limits(), queue, limit).Err()
}

// RemoveEnqueueLimit makes the queue unbounded.
func (s *Store) RemoveEnqueueLimit(ctx context.Context, queue string) error {
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	return s.rdb.HDel(ctx, s.keys.Limits(), queue).Err()
}

// RateLimit is a fleet-wide token bucket: Limit tokens per Window, holding at most Burst.
type RateLimit struct {
	Limit  int64
	Window time.Duration
	Burst  int64
}

// SetRateLimit configures a rate class, starting full. Admission charges a job's weight
// to its class; a class without a limit is unlimited.
func (s *Store) SetRateLimit(ctx context.Context, class string, rl RateLimit) error {
	if err := validateRequired("class", class, true); err != nil {
		return err
	}
	switch {
	case rl.Limit < 0:
		return invalid("Limit", "cannot be negative (%d)", rl.Limit)
	case rl.Window < time.Millisecond:
		return invalid("Window", "must be at least 1ms, not %s", rl.Window)
	case rl.Burst <= 0:
		return invalid("Burst", "must be positive, not %d", rl.Burst)
	}
	_, err := s.run(ctx, scriptSetRateLimit, "", class, rl.Limit, ms(rl.Window), rl.Burst)
	return err
}

// RemoveRateLimit makes the class unlimited.
func (s *Store) RemoveRateLimit(ctx context.Context, class string) error {
	if err := validateRequired("class", class, true); err != nil {
		return err
	}
	return s.rdb.Del(ctx, s.keys.Rate(class)).Err()
}

// PauseQueue stops admission from the queue; enqueues still succeed.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	return s.rdb.SAdd(ctx, s.keys.Paused(), queue).Err()
}

// ResumeQueue resumes admission from a paused queue.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	if err := validateRequired("queue", queue, false); err != nil {
		return err
	}
	if err := s.rdb.SRem(ctx, s.keys.Paused(), queue).Err(); err != nil {
		return err
	}
	return s.rdb.RPush(ctx, s.keys.Wake(queue), "1").Err()
}

// QuarantinedFingerprint is a fingerprint blocked after a job crashed into the limit.
type QuarantinedFingerprint struct {
	Fingerprint string
	JobID       string // the job that reached the crash limit
	Held        int64  // available siblings set aside until release
}

// Quarantined lists the quarantined fingerprints.
func (s *Store) Quarantined(ctx context.Context) ([]QuarantinedFingerprint, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.Quarantine()).Result()
	if err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	held := make(map[string]*redis.IntCmd, len(h))
	for fp := range h {
		held[fp] = pipe.SCard(ctx, s.keys.Held(fp))
	}
	if len(h) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]QuarantinedFingerprint, 0, len(h))
	for fp, id := range h {
		out = append(out, QuarantinedFingerprint{Fingerprint: fp, JobID: id, Held: held[fp].Val()})
	}
	slices.SortFunc(out, func(a, b QuarantinedFingerprint) int { return cmp.Compare(a.Fingerprint, b.Fingerprint) })
	return out, nil
}

// ReleaseQuarantine lifts a fingerprint's quarantine: enqueues with it are accepted again
// and its held siblings return to admission. It returns how many siblings it released.
// The quarantined job itself stays quarantined for the operator to inspect.
func (s *Store) ReleaseQuarantine(ctx context.Context, fingerprint string) (int, error) {
	if err := validateRequired("fingerprint", fingerprint, true); err != nil {
		return 0, err
	}
	const batch = 500
	total := 0
	for {
		reply, err := s.run(ctx, scriptReleaseQuarantine, "", fingerprint, batch)
		if err != nil {
			return total, err
		}
		total += int(asInt(reply, 0))
		if asInt(reply, 1) == 0 {
			return total, nil
		}
	}
}

// WaitForWork blocks until one of the queues gets a wake-up (new available work) or
// timeout passes, and reports whether it was woken. Wake-ups are hints: a caller still
// admits to find out, and polls at least every timeout in case one was missed.
func (s *Store) WaitForWork(ctx context.Context, queues []string, timeout time.Duration) (bool, error) {
	ks := make([]string, len(queues))
	for i, q := range queues {
		ks[i] = s.keys.Wake(q)
	}
	_, err := s.rdb.BLPop(ctx, timeout, ks...).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		reroute.AfterFailure(s.rdb, err)
	}
	return err == nil, err
}

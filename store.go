package headgate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of StoreConfig.
const (
	CrashLimitDefault = 3
	RetryBaseDefault  = time.Second
	RetryCapDefault   = time.Hour
	// CrashRetryBaseDefault is short: a lost lease is most often a dead host or a
	// deploy, not the job's fault, so its job is due again soon after the reclaim.
	CrashRetryBaseDefault = 250 * time.Millisecond

	DurableTimeoutDefault = time.Second
)

// StoreConfig configures a Store.
type StoreConfig struct {
	// Namespace holds all of the store's keys under "hg:{<Namespace>}:": the unit of
	// atomicity and of placement on a cluster. Required.
	Namespace string
	// CrashLimit is the number of lost leases after which a job is quarantined.
	// Defaults to CrashLimitDefault.
	CrashLimit int
	// RetryBase is the first retry's backoff; each further failure doubles it.
	// Defaults to RetryBaseDefault.
	RetryBase time.Duration
	// RetryCap bounds the backoff. Defaults to RetryCapDefault.
	RetryCap time.Duration
	// CrashRetryBase is the backoff after a job's first lost lease (crash); each further
	// crash doubles it, up to RetryCap. Defaults to CrashRetryBaseDefault.
	CrashRetryBase time.Duration
	// DurableReplicas, when > 0, makes Enqueue wait (Redis WAIT) until that many
	// replicas have the batch; fewer within DurableTimeout is *NotDurableError. Redis
	// replicates asynchronously, so without it a failover can lose jobs a producer was
	// told were enqueued. Defaults to 0: no waiting.
	DurableReplicas int
	// DurableTimeout bounds the wait for replicas. Defaults to DurableTimeoutDefault.
	DurableTimeout time.Duration
}

// WithDefaults returns a copy of the config with zero fields set to their defaults.
func (c *StoreConfig) WithDefaults() *StoreConfig {
	out := *c
	out.CrashLimit = cmp.Or(out.CrashLimit, CrashLimitDefault)
	out.RetryBase = cmp.Or(out.RetryBase, RetryBaseDefault)
	out.RetryCap = cmp.Or(out.RetryCap, RetryCapDefault)
	out.CrashRetryBase = cmp.Or(out.CrashRetryBase, CrashRetryBaseDefault)
	out.DurableTimeout = cmp.Or(out.DurableTimeout, DurableTimeoutDefault)
	return &out
}

func (c *StoreConfig) validate() error {
	if err := validateRequired("Namespace", c.Namespace, true); err != nil {
		return err
	}
	switch {
	case c.CrashLimit < 0:
		return invalid("CrashLimit", "cannot be negative")
	case c.RetryBase < time.Millisecond:
		return invalid("RetryBase", "must be at least 1ms")
	case c.RetryCap < c.RetryBase:
		return invalid("RetryCap", "must be at least RetryBase")
	case c.CrashRetryBase < time.Millisecond || c.CrashRetryBase > c.RetryCap:
		return invalid("CrashRetryBase", "must be between 1ms and RetryCap")
	case c.DurableReplicas < 0:
		return invalid("DurableReplicas", "cannot be negative")
	case c.DurableTimeout < time.Millisecond:
		return invalid("DurableTimeout", "must be at least 1ms")
	}
	return nil
}

// Store is the job store of one namespace on a Redis server or cluster. Every method
// that changes state runs one Lua script; it is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
	cfg  StoreConfig
}

// NewStore returns the store of cfg.Namespace on rdb.
func NewStore(rdb redis.UniversalClient, cfg *StoreConfig) (*Store, error) {
	if cfg == nil {
		cfg = &StoreConfig{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, keys: newKeys(c.Namespace), cfg: *c}, nil
}

// Namespace returns the store's namespace.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// Client returns the Redis client the store runs on.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// EnqueueResult is what Enqueue reports for one job: its state and run time after the
// call (for a replayed id, the existing job's).
type EnqueueResult struct {
	ID          string
	State       State
	ScheduledAt time.Time
	Replayed    bool
}

// Enqueue writes a batch of jobs, all or nothing. See lua/enqueue.lua for the order of
// checks. It returns *InvalidError, *IDConflictError, *QuarantinedError,
// *DuplicateError or *BackpressureError, and then nothing new was written. With
// DurableReplicas set it may also return the results together with *NotDurableError:
// written, but not yet confirmed by enough replicas.
func (s *Store) Enqueue(ctx context.Context, jobs ...Envelope) ([]EnqueueResult, error) {
	if len(jobs) > MaxBatch {
		return nil, invalid("jobs", "batch of %d is more than %d", len(jobs), MaxBatch)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	const fields = 21
	args := make([]any, 0, 2+fields*len(jobs))
	args = append(args, len(jobs), fields)
	ids := make(map[string]bool, len(jobs))
	uniques := map[string]string{}
	for i, e := range jobs {
		field := fmt.Sprintf("jobs[%d]", i)
		e, err := normalize(field, e)
		if err != nil {
			return nil, err
		}
		if ids[e.ID] {
			return nil, invalid(field+".ID", "%q appears twice in the batch", e.ID)
		}
		ids[e.ID] = true
		uf := uniqueField(&e)
		if uf != "" {
			if other, ok := uniques[uf]; ok {
				return nil, invalid(field+".UniqueKey", "%q is also the unique key of job %q in the batch", e.UniqueKey, other)
			}
			uniques[uf] = e.ID
		}
		pending := 0
		if e.Pending {
			pending = 1
		}
		args = append(args, e.ID, e.Kind, e.Queue, e.PartitionKey, e.Fingerprint, e.Priority,
			e.StickyWorker, unixMs(e.ScheduledAt), ms(e.Retention), e.MaxAttempts, e.SchemaVersion,
			e.Weight, e.RateClass, uf, ms(e.UniqueWindow), int(e.UniqueReplace), ms(e.UniqueDebounce),
			pending, strings.Join(e.Tags, "\n"), e.Payload, ms(e.ScheduledIn))
	}
	var reply []any
	var err error
	if s.cfg.DurableReplicas > 0 {
		reply, err = s.runDurable(ctx, scriptEnqueue, args...)
	} else {
		reply, err = s.run(ctx, scriptEnqueue, "", args...)
	}
	if reply == nil {
		return nil, err
	}
	out := make([]EnqueueResult, len(jobs))
	for i := range jobs {
		out[i] = EnqueueResult{
			ID:          jobs[i].ID,
			State:       State(asString(reply, 3*i)),
			ScheduledAt: fromMs(asInt(reply, 3*i+1)),
			Replayed:    asInt(reply, 3*i+2) == 1,
		}
	}
	return out, err // err: a *NotDurableError for a batch that was written
}

// AdmitRequest asks for work for one worker.
type AdmitRequest struct {
	Worker   string        // worker id; it alone admits jobs pinned to it
	LeaseID  string        // names this admission in the leases it grants
	Queues   []string      // served in this order
	Capacity int           // the most jobs to admit
	Lease    time.Duration // how long the leases last before renewal
	// Quantum is the round-robin credit, in weight units, a partition gets per turn.
	// Defaults to 1: one job of weight 1 per partition per turn.
	Quantum int
}

// Admit leases up to req.Capacity available jobs to a worker, taking turns across
// partitions (see lua/admit.lua).
func (s *Store) Admit(ctx context.Context, req AdmitRequest) ([]Claim, error) {
	if err := validateName("Worker", req.Worker, false); err != nil {
		return nil, err
	}
	if err := validateRequired("LeaseID", req.LeaseID, true); err != nil {
		return nil, err
	}
	switch {
	case len(req.Queues) == 0:
		return nil, invalid("Queues", "is empty")
	case req.Capacity <= 0 || req.Capacity > MaxCapacity:
		return nil, invalid("Capacity", "is %d, outside 1..%d", req.Capacity, MaxCapacity)
	case req.Lease < time.Millisecond:
		return nil, invalid("Lease", "must be at least 1ms, not %s", req.Lease)
	case req.Quantum < 0 || req.Quantum > MaxWeight:
		return nil, invalid("Quantum", "is %d, outside 0..%d", req.Quantum, MaxWeight)
	}
	for i, q := range req.Queues {
		if err := validateRequired(fmt.Sprintf("Queues[%d]", i), q, false); err != nil {
			return nil, err
		}
	}
	budget := 4*req.Capacity + 64
	args := []any{req.Worker, req.LeaseID, req.Capacity, ms(req.Lease), cmp.Or(req.Quantum, 1), budget, len(req.Queues)}
	for _, q := range req.Queues {
		args = append(args, q)
	}
	reply, err := s.run(ctx, scriptAdmit, "", args...)
	if err != nil {
		return nil, err
	}
	claims := make([]Claim, len(reply))
	for i, v := range reply {
		r, _ := v.([]any)
		if len(r) != 4 {
			return nil, fmt.Errorf("headgate: admit: unexpected reply %v", v)
		}
		// The hash is as it was before admission; admission set the rest.
		j := jobFromHash(asString(r, 0), hashFromReply(r[1]))
		claims[i] = Claim{
			Envelope:   j.Envelope,
			LeaseID:    req.LeaseID,
			Fence:      asInt(r, 2),
			ExpiresAt:  time.UnixMilli(asInt(r, 3)),
			Checkpoint: j.Checkpoint,
		}
	}
	return claims, nil
}

// Outcome is how an attempt ended.
type Outcome int

const (
	OutcomeSuccess     Outcome = iota + 1 // done; deleted at retention 0, else completed
	OutcomeRetry                          // failed; retried after a delay or backoff, archived when attempts are spent
	OutcomeSkip                           // give up: archived
	OutcomeUndecodable                    // the job cannot be handled: undecodable
	OutcomeRevoke                         // delete the job
	OutcomeSnooze                         // run again after a delay, spending no attempt
	OutcomeRateLimited                    // not now: available again at once, no counter moves
	OutcomeLeaseLost                      // applied by ReclaimExpired, never acked
)

var outcomeNames = map[Outcome]string{
	OutcomeSuccess: "success", OutcomeRetry: "retry", OutcomeSkip: "skip",
	OutcomeUndecodable: "undecodable", OutcomeRevoke: "revoke", OutcomeSnooze: "snooze",
	OutcomeRateLimited: "rate_limited", OutcomeLeaseLost: "lease_lost",
}

func (o Outcome) String() string {
	if n, ok := outcomeNames[o]; ok {
		return n
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// StateDeleted is what Ack reports when the outcome deleted the job.
const StateDeleted State = "deleted"

// AckOpts are the details of an ack; nil means none.
type AckOpts struct {
	Error string        // why the attempt failed (Retry, Skip, Undecodable)
	Delay time.Duration // Retry: instead of backoff; Snooze: required, > 0
	Logs  []string      // the attempt's log lines, kept in the job's history
	// ActualWeight, when set, is what the job really cost; its rate class is trued up.
	ActualWeight *int
	// Result is stored with a Success (only when the job is retained).
	Result *Blob
}

// Blob is opaque versioned bytes: a job's result or output.
type Blob struct {
	SchemaVersion int
	Bytes         []byte
}

func validateBlob(field string, b *Blob) error {
	switch {
	case b.SchemaVersion <= 0:
		return invalid(field+".SchemaVersion", "must be greater than zero")
	case b.SchemaVersion > MaxSchemaVersion:
		return invalid(field+".SchemaVersion", "is %d, more than the portable limit %d", b.SchemaVersion, MaxSchemaVersion)
	case len(b.Bytes) > MaxPayloadBytes:
		return invalid(field+".Bytes", "is %d bytes, more than the %d byte limit", len(b.Bytes), MaxPayloadBytes)
	}
	return nil
}

func validateLease(l LeaseRef) error {
	if l.JobID == "" {
		return invalid("lease.JobID", "is empty")
	}
	if l.LeaseID == "" {
		return invalid("lease.LeaseID", "is empty")
	}
	return nil
}

// Ack reports how the holder's attempt ended and returns the job's state after it.
// Anyone but the current holder gets *LeaseRejectedError and changes nothing.
func (s *Store) Ack(ctx context.Context, lease LeaseRef, outcome Outcome, opts *AckOpts) (State, error) {
	res, err := s.AckMany(ctx, []AckRequest{{Lease: lease, Outcome: outcome, Opts: opts}})
	if err != nil {
		return "", err
	}
	return res[0].State, res[0].Err
}

// AckRequest is one ack of a batch.
type AckRequest struct {
	Lease   LeaseRef
	Outcome Outcome
	Opts    *AckOpts
}

// AckResult is how one ack of a batch ended: the job's state after it, or Err
// (*LeaseRejectedError) when the caller was not the holder.
type AckResult struct {
	State State
	Err   error
}

// AckMany applies a batch of acks in one round trip. Each ack stands alone: one holder's
// rejection does not affect the others. Invalid input rejects the whole batch.
func (s *Store) AckMany(ctx context.Context, acks []AckRequest) ([]AckResult, error) {
	if len(acks) > MaxBatch {
		return nil, invalid("acks", "batch of %d is more than %d", len(acks), MaxBatch)
	}
	const fields = 10
	args := make([]any, 0, 3+fields*len(acks))
	args = append(args, ms(s.cfg.RetryBase), ms(s.cfg.RetryCap), len(acks))
	for i, a := range acks {
		ackArgs, err := ackArgs(fmt.Sprintf("acks[%d]", i), a)
		if err != nil {
			return nil, err
		}
		args = append(args, ackArgs...)
	}
	reply, err := s.run(ctx, scriptAck, "", args...)
	if err != nil {
		return nil, err
	}
	out := make([]AckResult, len(acks))
	for i := range acks {
		r, _ := reply[i].([]any)
		if code := asInt(r, 0); code != replyOK {
			out[i].Err = replyError("ack", acks[i].Lease.JobID, code, r[1:])
			continue
		}
		out[i].State = State(asString(r, 1))
	}
	return out, nil
}

func ackArgs(field string, a AckRequest) ([]any, error) {
	opts := a.Opts
	if opts == nil {
		opts = &AckOpts{}
	}
	if err := validateLease(a.Lease); err != nil {
		return nil, err
	}
	switch a.Outcome {
	case OutcomeLeaseLost:
		return nil, invalid(field+".Outcome", "lease_lost is applied by ReclaimExpired, not acked")
	case OutcomeSnooze:
		if opts.Delay <= 0 {
			return nil, invalid(field+".Delay", "snooze requires a delay > 0")
		}
	}
	if _, ok := outcomeNames[a.Outcome]; !ok {
		return nil, invalid(field+".Outcome", "unknown %s", a.Outcome)
	}
	if err := validateDuration(field+".Delay", opts.Delay); err != nil {
		return nil, err
	}
	actual := -1
	if opts.ActualWeight != nil {
		if *opts.ActualWeight < 0 || *opts.ActualWeight > MaxWeight {
			return nil, invalid(field+".ActualWeight", "is %d, outside 0..%d", *opts.ActualWeight, MaxWeight)
		}
		actual = *opts.ActualWeight
	}
	var result Blob
	if opts.Result != nil {
		if a.Outcome != OutcomeSuccess {
			return nil, invalid(field+".Result", "only a success carries a result")
		}
		if err := validateBlob(field+".Result", opts.Result); err != nil {
			return nil, err
		}
		result = *opts.Result
	}
	l := a.Lease
	return []any{l.JobID, l.LeaseID, l.Fence, a.Outcome.String(), opts.Error, ms(opts.Delay), actual,
		result.SchemaVersion, result.Bytes, strings.Join(opts.Logs, " | ")}, nil
}

// Renew extends the leases the caller still holds to now+lease and returns the ids of
// the jobs whose lease it lost.
func (s *Store) Renew(ctx context.Context, leases []LeaseRef, lease time.Duration) ([]string, error) {
	if lease < time.Millisecond {
		return nil, invalid("lease", "must be at least 1ms, not %s", lease)
	}
	if len(leases) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2+3*len(leases))
	args = append(args, ms(lease), len(leases))
	for _, l := range leases {
		if err := validateLease(l); err != nil {
			return nil, err
		}
		args = append(args, l.JobID, l.LeaseID, l.Fence)
	}
	reply, err := s.run(ctx, scriptRenew, "", args...)
	if err != nil {
		return nil, err
	}
	lost := make([]string, len(reply))
	for i := range reply {
		lost[i] = asString(reply, i)
	}
	return lost, nil
}

// Checkpoint records the holder's step in progress and steps done.
func (s *Store) Checkpoint(ctx context.Context, lease LeaseRef, cp Checkpoint) error {
	if err := validateLease(lease); err != nil {
		return err
	}
	if err := validateName("InProgress", cp.InProgress, true); err != nil {
		return err
	}
	for i, d := range cp.Done {
		if err := validateRequired(fmt.Sprintf("Done[%d]", i), d, true); err != nil {
			return err
		}
	}
	_, err := s.run(ctx, scriptCheckpoint, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		cp.InProgress, strings.Join(cp.Done, "\n"))
	return err
}

// Reclaimed is a job whose lease expired.
type Reclaimed struct {
	JobID        string
	Fingerprint  string
	CrashAttempt int
	Quarantined  bool
}

// ReclaimExpired applies LeaseLost to up to limit jobs whose lease expired: each is
// retryable after backoff, or quarantined at the crash limit.
func (s *Store) ReclaimExpired(ctx context.Context, limit int) ([]Reclaimed, error) {
	if limit <= 0 {
		return nil, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptReclaim, "", limit, s.cfg.CrashLimit, ms(s.cfg.CrashRetryBase), ms(s.cfg.RetryCap))
	if err != nil {
		return nil, err
	}
	out := make([]Reclaimed, len(reply))
	for i, v := range reply {
		r, _ := v.([]any)
		out[i] = Reclaimed{JobID: asString(r, 0), Fingerprint: asString(r, 1),
			CrashAttempt: int(asInt(r, 2)), Quarantined: asInt(r, 3) == 1}
	}
	return out, nil
}

// PromoteDue makes up to limit due scheduled and retryable jobs available. It returns
// how many it promoted and when the next scheduled job is due (zero when none is).
func (s *Store) PromoteDue(ctx context.Context, limit int) (int, time.Time, error) {
	if limit <= 0 {
		return 0, time.Time{}, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptPromote, "", limit)
	if err != nil {
		return 0, time.Time{}, err
	}
	next := time.Time{}
	if n := asInt(reply, 1); n >= 0 {
		next = time.UnixMilli(n)
	}
	return int(asInt(reply, 0)), next, nil
}

// EvictRetained deletes up to limit terminal jobs whose retention lapsed (quarantined
// jobs are exempt) and forgets up to limit ended throttle windows.
func (s *Store) EvictRetained(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptEvict, "", limit)
	if err != nil {
		return 0, err
	}
	return int(asInt(reply, 0)), nil
}

// ClaimDuty takes or renews the named maintenance duty for holder; false when another
// holder has it.
func (s *Store) ClaimDuty(ctx context.Context, name, holder string, lease time.Duration) (bool, error) {
	if err := validateRequired("name", name, true); err != nil {
		return false, err
	}
	if err := validateRequired("holder", holder, true); err != nil {
		return false, err
	}
	if lease < time.Millisecond {
		return false, invalid("lease", "must be at least 1ms, not %s", lease)
	}
	reply, err := s.run(ctx, scriptClaimDuty, "", name, holder, ms(lease))
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}

// ReleaseDuty gives the duty up if holder has it.
func (s *Store) ReleaseDuty(ctx context.Context, name, holder string) error {
	if err := validateRequired("name", name, true); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptReleaseDuty, "", name, holder)
	return err
}

// StoredBlob is a result or output as stored: stamped with the writer's fence and the
// store time.
type StoredBlob struct {
	Blob
	Fence     int64
	UpdatedAt time.Time
}

// WriteOutput stores the running job's output; only the holder may.
func (s *Store) WriteOutput(ctx context.Context, lease LeaseRef, out Blob) (StoredBlob, error) {
	if err := validateLease(lease); err != nil {
		return StoredBlob{}, err
	}
	if err := validateBlob("output", &out); err != nil {
		return StoredBlob{}, err
	}
	reply, err := s.run(ctx, scriptWriteOutput, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		out.SchemaVersion, out.Bytes)
	if err != nil {
		return StoredBlob{}, err
	}
	return StoredBlob{Blob: out, Fence: lease.Fence, UpdatedAt: time.UnixMilli(asInt(reply, 0))}, nil
}

// Progress is a running job's progress report.
type Progress struct {
	Current   int64
	Total     int64 // 0 = unknown
	Message   string
	Fence     int64     // set by the store
	UpdatedAt time.Time // set by the store
}

// WriteProgress stores the running job's progress; only the holder may.
func (s *Store) WriteProgress(ctx context.Context, lease LeaseRef, p Progress) (Progress, error) {
	if err := validateLease(lease); err != nil {
		return Progress{}, err
	}
	switch {
	case p.Current < 0 || p.Total < 0:
		return Progress{}, invalid("progress", "current and total cannot be negative (%d/%d)", p.Current, p.Total)
	case p.Total > 0 && p.Current > p.Total:
		return Progress{}, invalid("progress.Current", "%d is more than total %d", p.Current, p.Total)
	case len(p.Message) > MaxMessageBytes:
		return Progress{}, invalid("progress.Message", "is %d bytes, more than %d", len(p.Message), MaxMessageBytes)
	}
	reply, err := s.run(ctx, scriptWriteProgress, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		p.Current, p.Total, p.Message)
	if err != nil {
		return Progress{}, err
	}
	p.Fence, p.UpdatedAt = lease.Fence, time.UnixMilli(asInt(reply, 0))
	return p, nil
}

// ---- clock ----

// Now returns the store time: the frozen time when a test froze it, else Redis's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	v, err := s.rdb.Get(ctx, s.keys.Clock()).Int64()
	if err == nil {
		return time.UnixMilli(v), nil
	}
	if !errors.Is(err, redis.Nil) {
		return time.Time{}, err
	}
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, err
	}
	return t.Truncate(time.Millisecond), nil
}

// FreezeClock stops the namespace's store clock at t: every script reads it.
func (s *Store) FreezeClock(ctx context.Context, t time.Time) error {
	if t.UnixMilli() < 0 {
		return invalid("t", "is before 1970")
	}
	return s.rdb.Set(ctx, s.keys.Clock(), t.UnixMilli(), 0).Err()
}

// AdvanceClock steps the store clock forward by d, freezing it at now+d first if it was
// running.
func (s *Store) AdvanceClock(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return invalid("d", "cannot step the clock back (%s)", d)
	}
	now, err := s.Now(ctx)
	if err != nil {
		return err
	}
	return s.FreezeClock(ctx, now.Add(d))
}

// UnfreezeClock lets the store clock follow Redis's clock again.
func (s *Store) UnfreezeClock(ctx context.Context) error {
	return s.rdb.Del(ctx, s.keys.Clock()).Err()
}

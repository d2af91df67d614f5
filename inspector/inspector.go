package inspector

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
)

// Aliases of the store types the inspector hands out, so callers need not import the
// store package for them.
type (
	// QueueStats is one queue's counts by state, unfinished depth, limit and pause flag.
	QueueStats = headgate.QueueStats
	// JobFilter selects the jobs of one queue in one state for ListJobs and the bulk
	// verbs: kind, partition, tag, fingerprint, age.
	JobFilter = headgate.JobFilter
	// Page asks ListJobs for one page: size, order, cursor.
	Page = headgate.Page
	// JobPage is one page of a listing and the cursor of the next.
	JobPage = headgate.JobPage
	// RateLimit is a rate class's token bucket: Limit tokens per Window, at most Burst.
	RateLimit = headgate.RateLimit
	// QuarantinedFingerprint is a fingerprint blocked after a job crashed into the limit.
	QuarantinedFingerprint = headgate.QuarantinedFingerprint
)

// Inspector reads and steers one namespace of a headgate store. It is safe for
// concurrent use.
type Inspector struct {
	store *headgate.Store
	log   *slog.Logger
}

// Config configures an Inspector.
type Config struct {
	// Namespace is the store namespace to inspect. Required.
	Namespace string

	// Logger receives one INFO line per operator write that took effect (cancel, pause,
	// resume, limits, quarantine and pending releases), with the namespace and what it
	// acted on: an audit trail of who steered the namespace from this process. Reads,
	// refused writes and writes that changed nothing (a paused queue paused again, a
	// release of no pending job) are not logged. Defaults to slog.Default().
	Logger *slog.Logger
}

// New returns an inspector of cfg.Namespace on rdb.
func New(rdb redis.UniversalClient, cfg *Config) (*Inspector, error) {
	if rdb == nil {
		return nil, &headgate.InvalidError{Field: "rdb", Reason: "is nil"}
	}
	if cfg == nil {
		cfg = &Config{}
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	return &Inspector{store: store, log: cmp.Or(cfg.Logger, slog.Default()).With("namespace", cfg.Namespace)}, nil
}

// Namespace returns the inspected namespace.
func (i *Inspector) Namespace() string { return i.store.Namespace() }

// Now returns the store's time (Redis's clock, or a test's frozen one), the time every
// schedule, lease and rate bucket of the namespace is measured on.
func (i *Inspector) Now(ctx context.Context) (time.Time, error) { return i.store.Now(ctx) }

// Stats returns the stats of every queue that has had a job, a limit or a pause, by name.
func (i *Inspector) Stats(ctx context.Context) ([]QueueStats, error) {
	return i.store.QueueStats(ctx)
}

// ListJobs returns one page of the jobs of f.Queue in f.State that match f, newest
// first unless p.Oldest, from the job indexes: a page costs O(log N + p.Limit) per kind
// of the queue (one kind when f.Kind is set), however many jobs the queue holds. Pass
// the page's Next as p.Cursor, with the same filter and order, for the next page; a
// listing neither skips nor repeats a job that stays in the state while others move.
// Two or more of Partition, Tag and Fingerprint walk the first one's index and check the
// others, so such a page may be short, even empty, and still have a Next.
//
// It returns *headgate.InvalidError for a missing queue, an unknown state, a limit
// outside 1..headgate.ListLimitMax or a cursor ListJobs did not return, and
// *headgate.CursorFilterError (also an *InvalidError) for a cursor of another filter.
func (i *Inspector) ListJobs(ctx context.Context, f JobFilter, p Page) (*JobPage, error) {
	return i.store.ListJobs(ctx, f, p)
}

// JobDetail is a job with everything the store keeps about it.
type JobDetail struct {
	Job *headgate.Job
	// Errors is the job's error history, oldest first: one entry per failed, lost,
	// handed-back or logged attempt, with its time, attempt, fence and outcome.
	Errors []headgate.AttemptError
	// Result is a completed job's result; nil when it has none (results are kept only
	// for retained jobs).
	Result *headgate.StoredBlob
	// Output is the latest output the job wrote while running; nil when none.
	Output *headgate.StoredBlob
	// Progress is the latest progress the job reported; nil when none.
	Progress *headgate.Progress
	// Corrupt is why the store parked the job because its stored data could not be used
	// (as CorruptJobs lists it); "" when it did not. A parked job never runs, whatever
	// Job.State says: the state is the one it had when it was parked.
	Corrupt string
}

// Job returns one job in detail, or an error matching headgate.ErrJobNotFound.
func (i *Inspector) Job(ctx context.Context, id string) (*JobDetail, error) {
	j, err := i.store.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &JobDetail{Job: j}
	if d.Errors, err = i.store.JobErrors(ctx, id); err != nil {
		return nil, fmt.Errorf("inspector: errors of job %q: %w", id, err)
	}
	if d.Result, err = i.store.JobResult(ctx, id); err != nil {
		return nil, fmt.Errorf("inspector: result of job %q: %w", id, err)
	}
	if d.Output, err = i.store.JobOutput(ctx, id); err != nil {
		return nil, fmt.Errorf("inspector: output of job %q: %w", id, err)
	}
	if d.Progress, err = i.store.JobProgress(ctx, id); err != nil {
		return nil, fmt.Errorf("inspector: progress of job %q: %w", id, err)
	}
	parked, err := i.store.CorruptJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspector: whether job %q is parked: %w", id, err)
	}
	d.Corrupt = parked[id]
	return d, nil
}

// Cancel moves an unfinished job to cancelled, a terminal state; if it is running, its
// worker's later ack is rejected (the worker should stop when it next renews). It
// returns an error matching headgate.ErrJobNotFound, *headgate.NotCancellableError
// when the job has already finished, or *headgate.JobParkedError when its own stored data
// is corrupt: the store parked it (CorruptJobs) instead of cancelling it.
func (i *Inspector) Cancel(ctx context.Context, id string) error {
	return i.audit(i.store.Cancel(ctx, id), "job cancelled", "job_id", id)
}

// Pause stops admission from queue: running jobs finish, new jobs are still accepted
// and wait. A queue paused already is left so, and not logged.
func (i *Inspector) Pause(ctx context.Context, queue string) error {
	paused, _, ok := i.queueSetting(ctx, queue)
	return i.auditChange(!ok || !paused, i.store.PauseQueue(ctx, queue), "queue paused", "queue", queue)
}

// Resume restarts admission from a paused queue and wakes its idle workers. A queue
// that is not paused is not logged.
func (i *Inspector) Resume(ctx context.Context, queue string) error {
	paused, _, ok := i.queueSetting(ctx, queue)
	return i.auditChange(!ok || paused, i.store.ResumeQueue(ctx, queue), "queue resumed", "queue", queue)
}

// SetEnqueueLimit bounds queue's unfinished (not yet terminal) jobs: a batch that would
// pass limit is refused whole with *headgate.BackpressureError. A limit below the
// current depth refuses new work until jobs finish. The limit the queue has already is
// not logged.
func (i *Inspector) SetEnqueueLimit(ctx context.Context, queue string, limit int64) error {
	_, had, ok := i.queueSetting(ctx, queue)
	changed := !ok || had == nil || *had != limit
	return i.auditChange(changed, i.store.SetEnqueueLimit(ctx, queue, limit), "enqueue limit set", "queue", queue, "limit", limit)
}

// RemoveEnqueueLimit makes queue unbounded again; an unbounded queue is not logged.
func (i *Inspector) RemoveEnqueueLimit(ctx context.Context, queue string) error {
	_, had, ok := i.queueSetting(ctx, queue)
	return i.auditChange(!ok || had != nil, i.store.RemoveEnqueueLimit(ctx, queue), "enqueue limit removed", "queue", queue)
}

// SetRateLimit configures class's fleet-wide token bucket, starting full: admission
// charges each job its weight, and a job waits while its class lacks the tokens. It
// always changes the class (the bucket starts full again), and is always logged.
func (i *Inspector) SetRateLimit(ctx context.Context, class string, rl RateLimit) error {
	return i.audit(i.store.SetRateLimit(ctx, class, rl), "rate limit set", "class", class, "limit", rl.Limit, "window", rl.Window, "burst", rl.Burst)
}

// RemoveRateLimit makes class unlimited; a class without a limit is not logged.
func (i *Inspector) RemoveRateLimit(ctx context.Context, class string) error {
	limited, ok := i.rateLimited(ctx, class)
	return i.auditChange(!ok || limited, i.store.RemoveRateLimit(ctx, class), "rate limit removed", "class", class)
}

// Quarantined lists the quarantined fingerprints by name, each with the job that
// crashed into the limit and how many of its available siblings are held back.
func (i *Inspector) Quarantined(ctx context.Context) ([]QuarantinedFingerprint, error) {
	return i.store.Quarantined(ctx)
}

// ReleaseQuarantine lifts fingerprint's quarantine: enqueues with it are accepted again
// and its held siblings return to admission. It returns how many siblings it released.
// The job that crashed stays quarantined, for inspection. A fingerprint that was not
// quarantined (and held nothing) is not logged.
func (i *Inspector) ReleaseQuarantine(ctx context.Context, fingerprint string) (int, error) {
	was, ok := i.quarantined(ctx, fingerprint)
	n, err := i.store.ReleaseQuarantine(ctx, fingerprint)
	return n, i.auditChange(!ok || was || n > 0, err, "quarantine released", "fingerprint", fingerprint, "siblings_released", n)
}

// ReleasePending lets staged jobs run (scheduled or available by their time). It
// returns the ids that were not pending, which it left unchanged; a call that released
// none is not logged.
func (i *Inspector) ReleasePending(ctx context.Context, ids ...string) ([]string, error) {
	notPending, err := i.store.ReleasePending(ctx, ids...)
	released := len(ids) - len(notPending)
	return notPending, i.auditChange(released > 0, err, "pending jobs released", "jobs", released)
}

// UnknownQueue says whether stats (a namespace's queues, as Stats returns them) hold no
// queue named queue, and then names the queues they hold ("its queues: a, b", or "it
// has no queue"): a listing of a mistyped queue finds nothing, which reads as a queue
// without such jobs, so the command and the dashboard say this instead.
func UnknownQueue(stats []QueueStats, queue string) (unknown bool, queues string) {
	names := make([]string, 0, len(stats))
	for _, s := range stats {
		if s.Queue == queue {
			return false, ""
		}
		names = append(names, s.Queue)
	}
	if len(names) == 0 {
		return true, "it has no queue"
	}
	return true, "its queues: " + strings.Join(names, ", ")
}

package worker

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/headgate/headgate"
)

// Defaults of Config.
const (
	// QueueDefault is the queue a worker serves when Config.Queues names none.
	QueueDefault = headgate.QueueDefault
	// ConcurrencyDefault is how many jobs a worker runs at once.
	ConcurrencyDefault = 10
	// LeaseDefault is how long an admitted job's lease lasts between renewals. Leases are
	// renewed every third of it, so a worker that dies loses its jobs to the reclaimer
	// about one lease later.
	LeaseDefault = 30 * time.Second
	// ShutdownTimeoutDefault is how long Stop waits for running jobs before it cancels
	// them and hands them back.
	ShutdownTimeoutDefault = 10 * time.Second
	// ReclaimIntervalDefault is how often the reclaim duty looks for expired leases.
	ReclaimIntervalDefault = 250 * time.Millisecond
	// PromoteIntervalDefault is the longest the promote duty sleeps. It sleeps until the
	// next known due time when that is sooner, so only jobs scheduled less than this far
	// ahead while it sleeps can start late, by at most this much.
	PromoteIntervalDefault = 100 * time.Millisecond
	// EvictIntervalDefault is how often the evict duty deletes jobs whose retention lapsed.
	EvictIntervalDefault = time.Second
	// CronIntervalDefault is the longest the cron duty sleeps between looks at the
	// namespace's schedules.
	CronIntervalDefault = time.Second
	// StartTimeoutDefault is how long Start waits for Redis to answer before it fails.
	StartTimeoutDefault = 10 * time.Second
	// LogRepeatIntervalDefault is the shortest time between two log lines of one repeated
	// failure (same kind, same error).
	LogRepeatIntervalDefault = 10 * time.Second
	// DutyLeaseDefault is how long a worker holds a maintenance duty without renewing it;
	// when its holder dies, another worker takes the duty over within about this long.
	DutyLeaseDefault = 5 * time.Second
	// HeartbeatIntervalDefault is how often a worker writes its heartbeat.
	HeartbeatIntervalDefault = 5 * time.Second
)

// Config configures a Worker. The zero value of every field but Namespace is usable.
type Config struct {
	// Namespace is the store namespace the worker serves; producers and inspectors of the
	// same namespace see its jobs. Required.
	Namespace string

	// Queues are the queues the worker admits jobs from, in order: a queue is served
	// only while the ones before it have no admissible work.
	// Defaults to []string{QueueDefault}.
	Queues []string

	// Concurrency is how many jobs the worker runs at once, each on its own goroutine of
	// a fixed pool. Defaults to ConcurrencyDefault (10).
	Concurrency int

	// Lease is how long an admitted job's lease lasts; the worker renews the leases it
	// holds every Lease/3, in one call. When a lease is lost (the job was cancelled, or
	// the lease expired and was reclaimed) the handler's context is cancelled.
	// Defaults to LeaseDefault (30s).
	Lease time.Duration

	// Quantum is the round-robin credit, in weight units, that a partition gets per turn
	// at admission (see headgate.AdmitRequest). A larger quantum admits several jobs of a
	// partition per turn, which makes admission cheaper when few partitions are busy and
	// fairness coarser. Defaults to 1.
	Quantum int

	// ID names the worker in the store: jobs pinned to this id (StickyWorker) are admitted
	// only by it, and it is the holder of the maintenance duties it runs. It may not
	// contain ':', '{', '}' or control characters.
	// Defaults to "<hostname>-<pid>-<random>".
	ID string

	// JobTimeout bounds one attempt: when it passes, the handler's context is cancelled
	// and an attempt that then fails is retried as "timeout after <JobTimeout>". Zero
	// means no bound: a job runs as long as its lease is held. Defaults to 0.
	JobTimeout time.Duration

	// ShutdownTimeout is how long Stop waits for running jobs to finish after admission
	// stopped. Jobs still running then have their contexts cancelled and are handed back
	// at once (available to other workers, no attempt or crash counted).
	// Defaults to ShutdownTimeoutDefault (10s).
	ShutdownTimeout time.Duration

	// StartTimeout is how long Start (and Run) wait for Redis to answer a PING, retrying
	// with backoff, before they fail with an error that names the Redis address. A Redis
	// that refuses the client's credentials (NOAUTH, WRONGPASS) fails them at once.
	// Defaults to StartTimeoutDefault (10s).
	StartTimeout time.Duration

	// Logger receives the worker's logs: one line per failed attempt (with job_id, kind,
	// queue, partition and attempt; repeats thinned by LogRepeatInterval), an ERROR for
	// each job quarantined by the reclaim duty while this worker holds it, warnings for
	// lost leases and rejected acks, and one
	// WARN when Redis stops answering and one INFO when it answers again (a Redis outage
	// is not logged per retry). Defaults to slog.Default().
	//
	// go-redis logs some connection failures (failed dials, for one) on its own
	// process-wide logger, which writes to stderr; no option of a client changes it, and
	// the worker leaves it alone, since it belongs to the whole program. To keep those
	// lines out of a program's output, as the headgate command does, call once in main:
	//
	//	redis.SetLogger(&logging.VoidLogger{}) // github.com/redis/go-redis/v9/logging
	Logger *slog.Logger

	// LogRepeatInterval rate-limits the log lines of failed attempts that repeat: an
	// attempt that fails like an earlier one (same kind, same level, same error text, or
	// same panic value) within this interval of the last line logged for it writes no
	// line; the next line logged for it, once the interval passed, carries "repeated", the
	// number of lines left out. Only the log is thinned: every attempt's error is kept in
	// its job's history whatever this says. Negative logs every failure.
	// Defaults to LogRepeatIntervalDefault (10s).
	LogRepeatInterval time.Duration

	// ErrorHandler, when set, is called when an attempt fails (the handler returned an
	// error that would retry the job, or panicked) and may change how it ends; see
	// ErrorHandler. Defaults to nil: failures end as the handler's return value says.
	ErrorHandler ErrorHandler

	// Middleware wraps every handler of the worker, outermost first: Middleware[0] sees
	// each attempt first and its result last. It runs outside the middleware given to
	// Handle or HandleFunc for one kind, and also wraps the attempts of kinds that have no
	// handler here (which fail with "no handler for kind"). See Middleware.
	// Defaults to none.
	Middleware []Middleware

	// RetryBase, RetryCap, CrashLimit and CrashRetryBase are only defaults: the rules a
	// namespace applies are its policy in Redis (headgate.Policy, `headgate policy`),
	// shared by the fleet. For a field the namespace's policy lacks, the store calls this
	// worker makes use the value given here; once the policy is set (it is written whole)
	// these values no longer matter.
	//
	// RetryBase is the backoff after a job's first failure; each further failure doubles
	// it, up to RetryCap. Passed to the store. Defaults to headgate.RetryBaseDefault (1s).
	RetryBase time.Duration
	// RetryCap bounds the retry backoff. Defaults to headgate.RetryCapDefault (1h).
	RetryCap time.Duration
	// CrashLimit is how many lost leases quarantine a job (and its fingerprint).
	// Defaults to headgate.CrashLimitDefault (3).
	CrashLimit int
	// CrashRetryBase is the backoff after a job's first lost lease; each further one
	// doubles it, up to RetryCap. Defaults to headgate.CrashRetryBaseDefault (250ms).
	CrashRetryBase time.Duration
	// Scripts is how the worker's store runs its scripts (headgate.StoreConfig.Scripts).
	// Defaults to headgate.ScriptsDefault.
	Scripts headgate.ScriptMode

	// ReclaimInterval is how often the worker holding the reclaim duty looks for expired
	// leases. Defaults to ReclaimIntervalDefault (250ms).
	ReclaimInterval time.Duration
	// PromoteInterval is the longest the worker holding the promote duty sleeps between
	// promotions of due scheduled and retryable jobs; it wakes earlier for the next known
	// due time. Defaults to PromoteIntervalDefault (100ms).
	PromoteInterval time.Duration
	// EvictInterval is how often the worker holding the evict duty deletes finished jobs
	// whose retention lapsed. Defaults to EvictIntervalDefault (1s).
	EvictInterval time.Duration
	// CronInterval is the longest the worker holding the cron duty sleeps between looks
	// at the namespace's schedules; it wakes earlier for the next due tick, so only a
	// schedule added or changed while it sleeps waits this long for its first look.
	// Defaults to CronIntervalDefault (1s).
	CronInterval time.Duration
	// AllowEvictionPolicy lets Start go on when a server evicts keys at its memory limit
	// (maxmemory-policy allkeys-*, see headgate.CheckServer), logging a warning instead of
	// failing: such a server can delete jobs without a trace. Defaults to false.
	AllowEvictionPolicy bool
	// DutyLease is how long a maintenance duty stays with its holder without renewal.
	// Workers that do not hold a duty try to take it every DutyLease/5.
	// Defaults to DutyLeaseDefault (5s).
	DutyLease time.Duration
	// HeartbeatInterval is how often the worker writes its heartbeat (id, host, pid,
	// queues, kinds, concurrency, jobs in flight) to the store, where the inspector lists
	// it (`headgate workers`) and why tells a live worker from a dead one: a worker
	// whose heartbeat is older than 3 intervals is not live.
	// Defaults to HeartbeatIntervalDefault (5s).
	HeartbeatInterval time.Duration
}

// WithDefaults returns a copy of the config with zero fields set to their defaults.
func (c *Config) WithDefaults() *Config {
	out := *c
	if len(out.Queues) == 0 {
		out.Queues = []string{QueueDefault}
	} else {
		out.Queues = append([]string(nil), out.Queues...)
	}
	out.Concurrency = cmp.Or(out.Concurrency, ConcurrencyDefault)
	out.Lease = cmp.Or(out.Lease, LeaseDefault)
	out.ShutdownTimeout = cmp.Or(out.ShutdownTimeout, ShutdownTimeoutDefault)
	out.ID = cmp.Or(out.ID, defaultID())
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	out.RetryBase = cmp.Or(out.RetryBase, headgate.RetryBaseDefault)
	out.RetryCap = cmp.Or(out.RetryCap, headgate.RetryCapDefault)
	out.CrashLimit = cmp.Or(out.CrashLimit, headgate.CrashLimitDefault)
	out.CrashRetryBase = cmp.Or(out.CrashRetryBase, headgate.CrashRetryBaseDefault)
	out.ReclaimInterval = cmp.Or(out.ReclaimInterval, ReclaimIntervalDefault)
	out.PromoteInterval = cmp.Or(out.PromoteInterval, PromoteIntervalDefault)
	out.EvictInterval = cmp.Or(out.EvictInterval, EvictIntervalDefault)
	out.CronInterval = cmp.Or(out.CronInterval, CronIntervalDefault)
	out.DutyLease = cmp.Or(out.DutyLease, DutyLeaseDefault)
	out.HeartbeatInterval = cmp.Or(out.HeartbeatInterval, HeartbeatIntervalDefault)
	out.StartTimeout = cmp.Or(out.StartTimeout, StartTimeoutDefault)
	out.LogRepeatInterval = cmp.Or(out.LogRepeatInterval, LogRepeatIntervalDefault)
	out.Middleware = append([]Middleware(nil), out.Middleware...)
	return &out
}

// validate checks a config that WithDefaults filled in. Names are checked here with the
// store's rules so that a bad config fails at New, not at the first admission.
func (c *Config) validate() error {
	if c.Namespace == "" {
		return invalid("Namespace", "is required")
	}
	if err := headgate.ValidateName("Config.Namespace", c.Namespace); err != nil {
		return err
	}
	for i, q := range c.Queues {
		field := fmt.Sprintf("Queues[%d]", i)
		if q == "" {
			return invalid(field, "is empty")
		}
		if err := headgate.ValidateQueueName("Config."+field, q); err != nil {
			return err
		}
	}
	if err := headgate.ValidateQueueName("Config.ID", c.ID); err != nil {
		return err
	}
	durations := []struct {
		field string
		d     time.Duration
		min   time.Duration
	}{
		{"Lease", c.Lease, 3 * time.Millisecond},
		{"ShutdownTimeout", c.ShutdownTimeout, 0},
		{"ReclaimInterval", c.ReclaimInterval, time.Millisecond},
		{"PromoteInterval", c.PromoteInterval, time.Millisecond},
		{"EvictInterval", c.EvictInterval, time.Millisecond},
		{"CronInterval", c.CronInterval, time.Millisecond},
		{"DutyLease", c.DutyLease, 3 * time.Millisecond},
		{"HeartbeatInterval", c.HeartbeatInterval, time.Millisecond},
		{"StartTimeout", c.StartTimeout, time.Millisecond},
		{"RetryBase", c.RetryBase, time.Millisecond},
		{"CrashRetryBase", c.CrashRetryBase, time.Millisecond},
	}
	for _, d := range durations {
		switch {
		case d.d < 0:
			return invalid(d.field, "cannot be negative (%s)", d.d)
		case d.d < d.min:
			return invalid(d.field, "must be at least %s, not %s", d.min, d.d)
		}
	}
	for i, m := range c.Middleware {
		if m == nil {
			return invalid(fmt.Sprintf("Middleware[%d]", i), "is nil")
		}
	}
	switch {
	case c.Concurrency < 0:
		return invalid("Concurrency", "cannot be negative (%d)", c.Concurrency)
	case c.Quantum < 0 || c.Quantum > headgate.MaxWeight:
		return invalid("Quantum", "is %d, outside 0..%d", c.Quantum, headgate.MaxWeight)
	case c.JobTimeout < 0:
		return invalid("JobTimeout", "cannot be negative (%s)", c.JobTimeout)
	case c.CrashLimit < 0:
		return invalid("CrashLimit", "cannot be negative (%d)", c.CrashLimit)
	case c.RetryCap < c.RetryBase:
		return invalid("RetryCap", "must be at least RetryBase (%s), not %s", c.RetryBase, c.RetryCap)
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return &headgate.InvalidError{Field: "Config." + field, Reason: fmt.Sprintf(format, args...)}
}

// defaultID is "<hostname>-<pid>-<random>", with the characters a worker id may not
// contain replaced, so that two processes on one host never share an id.
func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	host = strings.Map(func(r rune) rune {
		if r == ':' || r == '{' || r == '}' || r < 0x20 || r == 0x7f {
			return '-'
		}
		return r
	}, host)
	if len(host) > 200 {
		host = host[:200]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

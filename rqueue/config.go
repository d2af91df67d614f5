package rqueue

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/headgate/headgate"
)

// Defaults of Config.
const (
	// QueueDefault is the queue of jobs that name none.
	QueueDefault = headgate.QueueDefault
	// MaxAttemptsDefault is how many failed attempts a job gets before it is archived.
	MaxAttemptsDefault = headgate.MaxAttemptsDefault
	// RetentionDefault keeps no successful job: it is deleted as it completes, which keeps
	// Redis's memory flat under any throughput. A job's retention is for its success only:
	// archived, undecodable and cancelled jobs are kept for the namespace policy's
	// retention of each (headgate.RetentionFailedDefault, 7 days, unless set with
	// headgate.Store.SetPolicy or `headgate policy set`), then evicted; quarantined jobs
	// are never evicted (they wait for an operator).
	RetentionDefault time.Duration = 0
)

// RetentionNone, as EnqueueOpts.Retention, deletes a job at success even when the
// client's Config.Retention keeps jobs.
const RetentionNone time.Duration = -1

// Config configures a Client.
type Config struct {
	// Namespace is the store namespace the client writes to; workers and inspectors of
	// the same namespace see its jobs. All keys of a namespace live in one Redis Cluster
	// slot. Required.
	Namespace string

	// Queue is the queue of jobs whose args and options name none.
	// Defaults to QueueDefault ("default").
	Queue string

	// MaxAttempts is the attempt limit of jobs whose args and options set none.
	// Defaults to MaxAttemptsDefault (25).
	MaxAttempts int

	// Retention is how long a successful job (and its result) is kept before eviction,
	// for jobs whose args and options set none. Zero deletes it as it completes. Jobs
	// that end otherwise are kept by the namespace policy (see RetentionDefault).
	// Defaults to RetentionDefault (0).
	Retention time.Duration

	// DurableReplicas, when > 0, makes every enqueue wait (Redis WAIT, on the connection
	// that wrote the jobs) until that many replicas of the namespace's master have them.
	// Redis replicates asynchronously: without it, a job acknowledged just before the
	// master fails can be missing on the replica that takes over. When fewer replicas
	// confirm within DurableTimeout, the call returns the results together with
	// *headgate.NotDurableError: the jobs were written but may not survive a failover;
	// enqueueing them again with the same ids is safe (a replay writes nothing and waits
	// again). Defaults to 0: an enqueue returns as soon as the master has the jobs.
	DurableReplicas int

	// DurableTimeout bounds the wait for replicas. Defaults to
	// headgate.DurableTimeoutDefault (1s).
	DurableTimeout time.Duration

	// Scripts is how the client's store runs its scripts (headgate.StoreConfig.Scripts).
	// Defaults to headgate.ScriptsDefault.
	Scripts headgate.ScriptMode

	// Logger receives the client's warnings: one WARN per enqueue whose jobs were written
	// but not confirmed by DurableReplicas replicas in time. Errors the caller gets back
	// are not logged. Defaults to slog.Default().
	Logger *slog.Logger

	// EnqueueMiddleware wraps every batch the client sends to the store, outermost
	// first, for example to add tags or trace context to the envelopes, or to count
	// enqueues. See EnqueueMiddleware. Defaults to none.
	EnqueueMiddleware []EnqueueMiddleware
}

// WithDefaults returns a copy of the config with zero fields set to their defaults.
func (c *Config) WithDefaults() *Config {
	out := *c
	out.Queue = cmp.Or(out.Queue, QueueDefault)
	out.MaxAttempts = cmp.Or(out.MaxAttempts, MaxAttemptsDefault)
	out.Retention = cmp.Or(out.Retention, RetentionDefault)
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	out.EnqueueMiddleware = append([]EnqueueMiddleware(nil), out.EnqueueMiddleware...)
	if out.DurableReplicas > 0 {
		out.DurableTimeout = cmp.Or(out.DurableTimeout, headgate.DurableTimeoutDefault)
	}
	return &out
}

// validate checks a config that WithDefaults filled in. The store validates names again
// at every enqueue; checking here makes a bad config fail at NewClient, not at the first
// enqueue in production.
func (c *Config) validate() error {
	switch {
	case c.Namespace == "":
		return invalid("Config.Namespace", "is required")
	case c.MaxAttempts < 0:
		return invalid("Config.MaxAttempts", "cannot be less than zero (%d)", c.MaxAttempts)
	case c.Retention < 0:
		return invalid("Config.Retention", "cannot be negative (%s)", c.Retention)
	case c.DurableReplicas < 0:
		return invalid("Config.DurableReplicas", "cannot be negative (%d)", c.DurableReplicas)
	case c.DurableTimeout < 0:
		return invalid("Config.DurableTimeout", "cannot be negative (%s)", c.DurableTimeout)
	case c.DurableReplicas > 0 && c.DurableTimeout < time.Millisecond:
		return invalid("Config.DurableTimeout", "must be at least 1ms (%s)", c.DurableTimeout)
	}
	for i, m := range c.EnqueueMiddleware {
		if m == nil {
			return invalid(fmt.Sprintf("Config.EnqueueMiddleware[%d]", i), "is nil")
		}
	}
	if err := headgate.ValidateName("Config.Namespace", c.Namespace); err != nil {
		return err
	}
	return headgate.ValidateQueueName("Config.Queue", c.Queue)
}

func invalid(field, format string, args ...any) error {
	return &headgate.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

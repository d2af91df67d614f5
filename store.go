package headgate

import (
	"cmp"
	"context"
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
	// CrashLimit, RetryBase, RetryCap and CrashRetryBase are only defaults: the rules a
	// namespace applies are its Policy, stored in Redis and shared by the whole fleet.
	// When the namespace's policy lacks a field, the scripts this store calls use the
	// value given here for that call (so two stores configured differently apply
	// different values to a namespace without a policy); SetPolicy writes every field,
	// after which these values no longer matter.
	//
	// CrashLimit is the number of lost leases after which a job is quarantined (policy
	// crash_limit). Defaults to CrashLimitDefault.
	CrashLimit int
	// RetryBase is the first retry's backoff; each further failure doubles it (policy
	// retry_base). Defaults to RetryBaseDefault.
	RetryBase time.Duration
	// RetryCap bounds the backoff (policy retry_cap). Defaults to RetryCapDefault.
	RetryCap time.Duration
	// CrashRetryBase is the backoff after a job's first lost lease (crash), jittered per
	// job; each further crash doubles it, up to RetryCap (policy crash_base). Defaults to
	// CrashRetryBaseDefault.
	CrashRetryBase time.Duration
	// DurableReplicas, when > 0, makes Enqueue wait (Redis WAIT) until that many
	// replicas have the batch; fewer within DurableTimeout is *NotDurableError. Redis
	// replicates asynchronously, so without it a failover can lose jobs a producer was
	// told were enqueued. Defaults to 0: no waiting.
	DurableReplicas int
	// DurableTimeout bounds the wait for replicas. Defaults to DurableTimeoutDefault.
	DurableTimeout time.Duration
	// Scripts is how the store runs its scripts: ScriptsAuto (Redis Functions where the
	// server allows, else EVAL) or ScriptsEval. Defaults to ScriptsDefault.
	Scripts ScriptMode
}

// WithDefaults returns a copy of the config with zero fields set to their defaults.
func (c *StoreConfig) WithDefaults() *StoreConfig {
	out := *c
	out.CrashLimit = cmp.Or(out.CrashLimit, CrashLimitDefault)
	out.RetryBase = cmp.Or(out.RetryBase, RetryBaseDefault)
	out.RetryCap = cmp.Or(out.RetryCap, RetryCapDefault)
	out.CrashRetryBase = cmp.Or(out.CrashRetryBase, CrashRetryBaseDefault)
	out.DurableTimeout = cmp.Or(out.DurableTimeout, DurableTimeoutDefault)
	out.Scripts = cmp.Or(out.Scripts, ScriptsDefault)
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
	return c.Scripts.validate()
}

// Store is the job store of one namespace on a Redis server or cluster. Every method
// that changes state runs one Lua script; it is safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	keys    keys
	cfg     StoreConfig
	scripts *scriptRunner
	format  formatCheck
}

// NewStore returns the store of cfg.Namespace on rdb.
func NewStore(rdb redis.UniversalClient, cfg *StoreConfig) (*Store, error) {
	if rdb == nil {
		return nil, invalid("rdb", "is nil")
	}
	if cfg == nil {
		cfg = &StoreConfig{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	k := newKeys(c.Namespace)
	return &Store{rdb: rdb, keys: k, cfg: *c, scripts: newScriptRunner(rdb, k.Prefix(), c.Scripts)}, nil
}

// Namespace returns the store's namespace.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// Client returns the Redis client the store runs on.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// node returns the client of the server holding the namespace: on a cluster, the master
// of its slot, so that SCAN walks the right key space.
func (s *Store) node(ctx context.Context) (redis.UniversalClient, error) {
	return s.scripts.node(ctx)
}

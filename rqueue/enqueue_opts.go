package rqueue

import (
	"time"

	"github.com/headgate/headgate"
)

// Args are a job's arguments. Kind names the job type: workers select a handler by it,
// so it must be stable across deploys. The args themselves are encoded with msgpack
// (github.com/vmihailenco/msgpack/v5, `msgpack:"name"` struct tags) into the job's
// payload; a worker decodes the payload into the same type.
type Args interface {
	Kind() string
}

// ArgsWithEnqueueOpts are args that carry default options for their kind, such as its
// queue, priority or uniqueness. Options given to an enqueue call take precedence field
// by field, and the client's Config fills what neither sets. The method sees the args'
// fields, so it can also derive per-job options from them, such as an idempotent ID
// ("order-" + a.OrderID) or a Partition (a.TenantID).
type ArgsWithEnqueueOpts interface {
	Args
	EnqueueOpts() EnqueueOpts
}

// EnqueueOpts are the options of one job. A nil *EnqueueOpts, and every zero field,
// means "inherit": from the args' own EnqueueOpts when they have them, then from the
// client's Config, then the store's defaults.
type EnqueueOpts struct {
	// ID is the job's id. Enqueueing an id again with the same kind, fingerprint and
	// queue is an idempotent success that writes nothing, so a caller-chosen id makes a
	// retried enqueue safe; reusing an id for different content is *headgate.IDConflictError.
	// This holds while the job is stored: once it is deleted (at success with Retention 0)
	// or evicted, the id makes a new job (see "Ids and idempotency" in the package doc).
	// Defaults to NewID().
	ID string

	// Queue is the queue the job waits in. Defaults to Config.Queue.
	Queue string

	// Priority orders jobs inside a partition: higher first. Defaults to 0.
	Priority int32

	// ScheduledAt is when the job becomes available. A time in the past, or zero, means
	// now. Cannot be set together with ScheduledIn.
	ScheduledAt time.Time

	// ScheduledIn delays the job by this much from the store's clock (Redis's time, or a
	// test's frozen time) at the moment the enqueue script runs, not the host's. Cannot
	// be set together with ScheduledAt.
	ScheduledIn time.Duration

	// MaxAttempts is how many failed attempts the job gets before it is archived.
	// Defaults to Config.MaxAttempts.
	MaxAttempts int

	// Partition is the fairness key, typically a tenant: admission takes turns across
	// the partitions of a queue, so one noisy partition cannot starve the others.
	// Defaults to "" (one shared partition).
	Partition string

	// Fingerprint identifies jobs that would crash alike (say, the same customer import).
	// When one of them loses its lease CrashLimit times it is quarantined, and its
	// fingerprint blocks its siblings, queued and new, until an operator releases it.
	// Defaults to "" (no sibling blocking).
	Fingerprint string

	// RateClass is the fleet-wide token bucket charged Weight tokens when the job is
	// admitted; a class without a configured limit is unlimited. Defaults to "" (none).
	RateClass string

	// Weight is the job's cost in rate tokens and in round-robin credit.
	// Defaults to 1.
	Weight int

	// Sticky pins the job to one worker id (worker.Config.ID): only that worker admits
	// it, and while no live worker has that id the job waits (headgate why says
	// pinned_worker_gone). A worker's default id is new in each process, so pin only to
	// workers given a stable ID. A worker alternates its pinned jobs with the shared
	// ones, so a pinned job can go before a shared one of higher priority in the same
	// partition. Defaults to "" (any worker).
	Sticky string

	// Unique makes the job unique by its unique key. Defaults to not unique.
	Unique UniqueOpts

	// Retention keeps the job this long after it succeeds; RetentionNone deletes it at
	// once. It does not apply to other ends (archived, undecodable, cancelled: the
	// namespace policy's retention; quarantined: until an operator acts). Defaults to
	// Config.Retention.
	Retention time.Duration

	// Tags label the job for operators; they are stored sorted and without repeats.
	// Defaults to none.
	Tags []string

	// Pending stages the job: it is never run until released with Client.Release (to
	// scheduled or available). Defaults to false.
	Pending bool
}

// UniqueOpts make a job unique by (queue, kind, key) in the namespace. An enqueue that
// finds the key held is a duplicate: it writes no new job (see Result.Duplicate).
type UniqueOpts struct {
	// Key is the unique key. Either Key or ByArgs (or both) enable uniqueness.
	Key string

	// ByArgs appends a digest of the encoded args to Key, so jobs of a kind with equal
	// args are duplicates. Map fields are encoded with sorted keys, so equal maps agree.
	ByArgs bool

	// Window is how long the key is held. Zero holds it until the holder is finished
	// (completed, archived, cancelled, ...); a positive window throttles: the key is
	// held until the window ends, whatever happens to the holder.
	Window time.Duration

	// Debounce, when set, makes a duplicate push the holder (while it has not started)
	// to now+Debounce and give it the duplicate's payload, fingerprint and tags: the
	// job runs once, Debounce after the last enqueue, with the latest args. A new job
	// is itself delayed by Debounce.
	Debounce time.Duration

	// Replace selects what a duplicate replaces in a holder that has not started:
	// payload, scheduled time, priority, attempt limit.
	Replace headgate.ReplaceMask
}

// set reports whether any unique option is set; a window without a key then reaches
// the store, which refuses it, rather than being dropped here.
func (u *UniqueOpts) set() bool { return *u != UniqueOpts{} }

// merge returns o with its zero fields taken from base.
func (o EnqueueOpts) merge(base EnqueueOpts) EnqueueOpts {
	or := func(v, b string) string {
		if v != "" {
			return v
		}
		return b
	}
	o.ID = or(o.ID, base.ID)
	o.Queue = or(o.Queue, base.Queue)
	o.Partition = or(o.Partition, base.Partition)
	o.Fingerprint = or(o.Fingerprint, base.Fingerprint)
	o.RateClass = or(o.RateClass, base.RateClass)
	o.Sticky = or(o.Sticky, base.Sticky)
	if o.Priority == 0 {
		o.Priority = base.Priority
	}
	// The schedule is one setting: a call that sets either time overrides both of the
	// args' defaults.
	if o.ScheduledAt.IsZero() && o.ScheduledIn == 0 {
		o.ScheduledAt, o.ScheduledIn = base.ScheduledAt, base.ScheduledIn
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = base.MaxAttempts
	}
	if o.Weight == 0 {
		o.Weight = base.Weight
	}
	if !o.Unique.set() {
		o.Unique = base.Unique
	}
	if o.Retention == 0 {
		o.Retention = base.Retention
	}
	if o.Tags == nil {
		o.Tags = base.Tags
	}
	o.Pending = o.Pending || base.Pending
	return o
}

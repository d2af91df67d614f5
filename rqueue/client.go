package rqueue

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/msgpackcheck"
)

// Client enqueues jobs into one namespace. It is safe for concurrent use.
type Client struct {
	cfg   Config
	store *headgate.Store
	send  EnqueueFunc // the store's enqueue inside Config.EnqueueMiddleware

	// singles sends the jobs of concurrent Enqueue calls in shared script calls.
	singles *coalescer
}

// NewClient returns a client of cfg.Namespace on rdb, which may be a single Redis, a
// Sentinel-backed or a Cluster client.
func NewClient(rdb redis.UniversalClient, cfg *Config) (*Client, error) {
	if rdb == nil {
		return nil, invalid("rdb", "is nil")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: c.Namespace,
		DurableReplicas: c.DurableReplicas, DurableTimeout: c.DurableTimeout, Scripts: c.Scripts})
	if err != nil {
		return nil, err
	}
	client := &Client{cfg: *c, store: store}
	client.send = client.sender()
	return client, nil
}

// Config returns the client's configuration, defaults applied.
func (c *Client) Config() Config { return c.cfg }

// Store returns the job store the client writes to, for what the producer API does not
// cover (such as a test freezing the store clock).
func (c *Client) Store() *headgate.Store { return c.store }

// EnqueueParams is one job of an EnqueueMany batch.
type EnqueueParams struct {
	Args Args
	Opts *EnqueueOpts // nil inherits every option
}

// Enqueue stores one job and returns it as stored.
//
// A job whose unique key is held is not an error: nothing new is written and the result
// describes the job that holds the key, with Duplicate set (and Replaced when the
// duplicate's debounce or replace options updated it). Enqueueing means "make sure this
// work is queued", and a held key says it is. Callers who must know check r.Duplicate.
//
// Errors: *headgate.InvalidError (nothing reached Redis), *headgate.IDConflictError,
// *headgate.QuarantinedError, *headgate.BackpressureError, or a Redis error; match
// them with errors.As. Nothing is written on the typed errors. With Config.DurableReplicas
// set, *headgate.NotDurableError comes with a Result: the job was written but too few
// replicas confirmed it in time; enqueue it again with Opts.ID set to Result.ID to wait
// again. A Redis error (a connection lost mid-call, a failover) leaves it unknown whether
// the job was written; retrying with a caller-chosen id is safe. On a Redis Cluster such
// an error also has the client look up the namespace's master again, so a retry after a
// failover goes to the promoted replica.
//
// Concurrent calls share script calls: a call that finds none of the client's in flight
// goes out at once, and calls that arrive meanwhile go out together as one batch when it
// returns (or beside it, on a second connection, once 16 wait), each with its own result
// and error as if sent alone (the middleware still
// sees each job alone). A call whose ctx ends while its job waits returns ctx's error and
// its job is never sent; one whose ctx ends while its batch is being written returns
// ctx's error too, and the job may have been written.
func (c *Client) Enqueue(ctx context.Context, args Args, opts *EnqueueOpts) (*Result, error) {
	env, err := c.envelope("args", "EnqueueOpts", args, opts)
	if err != nil {
		return nil, err
	}
	envs := []headgate.Envelope{env}
	res, err := c.send(ctx, envs)
	env = envs[0]
	var dup *headgate.DuplicateError
	if errors.As(err, &dup) {
		return duplicate(env, dup), nil
	}
	if err != nil {
		err = callerFields(err, func(int) (string, string) { return "args", "EnqueueOpts" })
		err = fmt.Errorf("rqueue: enqueue job %s%s: %w", quote(env.ID), kindNote(env.Kind), err)
		if notDurable(err) {
			return resultOf(env, res[0]), err
		}
		return nil, err
	}
	return resultOf(env, res[0]), nil
}

// EnqueueMany stores a batch of jobs atomically: all of them, or none. Results are in
// the order of params. Replays of existing ids succeed and consume no queue capacity.
//
// Unlike Enqueue, a unique-key hit in a batch refuses the whole batch with
// *headgate.DuplicateError: the store cannot write the rest of a batch around a
// duplicate. A refused batch writes nothing, so a duplicate's debounce or replace
// options are not applied to the holder either (except in a batch of one job, which is
// that job's Enqueue: Replaced reports it). Enqueue unique jobs with Enqueue to get a
// Result, and the replacement, instead.
//
// The other errors are those of Enqueue (a *headgate.NotDurableError comes with the
// results); a batch is at most headgate.MaxBatch jobs.
func (c *Client) EnqueueMany(ctx context.Context, params []EnqueueParams) ([]*Result, error) {
	if len(params) == 0 {
		return nil, nil
	}
	if len(params) > headgate.MaxBatch {
		return nil, fmt.Errorf("rqueue: enqueue batch of %d jobs: %w", len(params),
			invalid("params", "holds %d jobs, more than headgate.MaxBatch (%d)", len(params), headgate.MaxBatch))
	}
	envs := make([]headgate.Envelope, len(params))
	for i, p := range params {
		field := fmt.Sprintf("params[%d]", i)
		env, err := c.envelope(field+".Args", field+".Opts", p.Args, p.Opts)
		if err != nil {
			return nil, err
		}
		envs[i] = env
	}
	res, err := c.send(ctx, envs)
	if err != nil {
		err = callerFields(err, func(i int) (string, string) {
			field := fmt.Sprintf("params[%d]", i)
			return field + ".Args", field + ".Opts"
		})
		err = fmt.Errorf("rqueue: enqueue batch of %d jobs: %w", len(envs), err)
		if !notDurable(err) {
			return nil, err
		}
	}
	out := make([]*Result, len(envs))
	for i := range envs {
		out[i] = resultOf(envs[i], res[i])
	}
	return out, err
}

// kindNote is ", kind K" for messages, or nothing when the kind is empty (the store
// refuses that, and says so).
func kindNote(kind string) string {
	if kind == "" {
		return ""
	}
	return " of kind " + quote(kind)
}

// notDurable reports whether err says a batch was written but not confirmed by enough
// replicas: the only error that comes with results.
func notDurable(err error) bool {
	var nd *headgate.NotDurableError
	return errors.As(err, &nd)
}

// Release lets staged (Pending) jobs run: each becomes scheduled or available by its
// ScheduledAt. It returns the ids that were not pending, which it left unchanged.
func (c *Client) Release(ctx context.Context, ids ...string) ([]string, error) {
	return c.store.ReleasePending(ctx, ids...)
}

// duplicate describes the job that holds a unique key, as the enqueue script saw it.
func duplicate(env headgate.Envelope, dup *headgate.DuplicateError) *Result {
	return &Result{ID: dup.ExistingID, Kind: env.Kind, Queue: env.Queue, Duplicate: true, Replaced: dup.Replaced,
		State: dup.State, ScheduledAt: dup.ScheduledAt}
}

// envelope turns args and options into the envelope the store writes, applying the
// args' options, then the client's defaults. argsField and optsField name the inputs in
// errors.
func (c *Client) envelope(argsField, optsField string, args Args, opts *EnqueueOpts) (headgate.Envelope, error) {
	if args == nil {
		return headgate.Envelope{}, invalid(argsField, "is nil")
	}
	var o EnqueueOpts
	if opts != nil {
		o = *opts
	}
	if a, ok := args.(ArgsWithEnqueueOpts); ok {
		o = o.merge(a.EnqueueOpts())
	}
	kind := args.Kind()
	payload, err := encodeArgs(args)
	if err != nil {
		// The caller's mistake, like a bad option: an *InvalidError naming the args, which
		// still wraps msgpack's error.
		inv := invalid(argsField, "%T%s does not encode with msgpack", args, kindNote(kind))
		return headgate.Envelope{}, fmt.Errorf("rqueue: %w: %w", inv, err)
	}

	switch {
	case o.ScheduledIn < 0:
		return headgate.Envelope{}, invalid(optsField+".ScheduledIn", "is negative (%s)", o.ScheduledIn)
	case o.ScheduledIn > 0 && !o.ScheduledAt.IsZero():
		return headgate.Envelope{}, invalid(optsField+".ScheduledIn", "cannot be set together with ScheduledAt")
	}

	retention := o.Retention
	switch {
	case retention == 0:
		retention = c.cfg.Retention
	case retention == RetentionNone:
		retention = 0
	case retention < 0:
		return headgate.Envelope{}, invalid(optsField+".Retention", "is negative (%s); use RetentionNone to keep nothing", retention)
	}

	uniqueKey := o.Unique.Key
	if o.Unique.ByArgs {
		digest, err := argsDigest(payload)
		if err != nil {
			return headgate.Envelope{}, err
		}
		if uniqueKey != "" {
			uniqueKey += ":" + digest
		} else {
			uniqueKey = digest
		}
	}

	id := o.ID
	if id == "" {
		id = NewID()
	}
	return headgate.Envelope{
		ID:             id,
		Kind:           kind,
		Payload:        payload,
		Queue:          cmp.Or(o.Queue, c.cfg.Queue),
		PartitionKey:   o.Partition,
		Fingerprint:    o.Fingerprint,
		Priority:       o.Priority,
		StickyWorker:   o.Sticky,
		ScheduledAt:    o.ScheduledAt,
		ScheduledIn:    o.ScheduledIn,
		Retention:      retention,
		MaxAttempts:    cmp.Or(o.MaxAttempts, c.cfg.MaxAttempts),
		Weight:         o.Weight,
		Tags:           o.Tags,
		RateClass:      o.RateClass,
		UniqueKey:      uniqueKey,
		UniqueWindow:   o.Unique.Window,
		UniqueReplace:  o.Unique.Replace,
		UniqueDebounce: o.Unique.Debounce,
		Pending:        o.Pending,
	}, nil
}

// encodeArgs is msgpack.Marshal with map keys sorted where msgpack can sort them.
// msgpack.Unmarshal decodes it. The payload is the one allocation of its own: the
// encoder and its buffer are reused, from one call to the next.
func encodeArgs(args any) ([]byte, error) {
	e := argsEncoders.Get().(*argsEncoder)
	defer e.put()
	e.enc.Reset(&e.buf)
	e.enc.SetSortMapKeys(true)
	if err := e.enc.Encode(args); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// argsEncoder is a msgpack encoder with the buffer it writes to, kept for reuse.
type argsEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// maxPooledArgsBuffer bounds the buffer an argsEncoder keeps: the args of most jobs are
// small, and one huge payload should not pin its buffer for the process's life.
const maxPooledArgsBuffer = 64 << 10

var argsEncoders = sync.Pool{New: func() any {
	e := &argsEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

func (e *argsEncoder) put() {
	if e.buf.Cap() > maxPooledArgsBuffer {
		return
	}
	e.buf.Reset()
	e.enc.Reset(nil) // holds nothing of the caller's
	argsEncoders.Put(e)
}

// maxArgsDepth is how deep the args of a job unique by args may nest.
const maxArgsDepth = 1000

// argsDigest names the content of encoded args for UniqueOpts.ByArgs. msgpack sorts the
// keys of only some map types (a map[string]int field encodes in random order), so the
// payload is decoded into generic values, whose maps it does sort, and encoded again:
// equal args always give the same digest.
func argsDigest(payload []byte) (string, error) {
	// Decoding a header that declares more elements than the payload holds, or nesting
	// without end, would take the process down (see msgpackcheck).
	if err := msgpackcheck.Check(payload, maxArgsDepth); err != nil {
		return "", fmt.Errorf("rqueue: unique by args: %w", err)
	}
	var v any
	if err := msgpack.Unmarshal(payload, &v); err != nil {
		return "", fmt.Errorf("rqueue: unique by args: %w", err)
	}
	canonical, err := encodeArgs(v)
	if err != nil {
		return "", fmt.Errorf("rqueue: unique by args: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:16]), nil
}

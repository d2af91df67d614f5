/*
Package rqueue is headgate's producer API: it turns typed job arguments into jobs in a
headgate store on Redis.

# Jobs

A job type is a Go type that implements Args:

	type SendEmail struct {
		To      string `msgpack:"to"`
		Subject string `msgpack:"subject"`
	}

	func (SendEmail) Kind() string { return "send_email" }

The args are encoded with msgpack into the job's payload; a worker decodes the payload
into the same type. Kind selects the worker's handler, so keep it stable.

# Enqueueing

	client, err := rqueue.NewClient(rdb, &rqueue.Config{Namespace: "billing"})
	...
	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &rqueue.EnqueueOpts{
		Partition:   "tenant-42",      // fairness: tenants take turns
		ScheduledIn: 10 * time.Minute, // on the store's clock
	})

EnqueueMany writes a batch atomically: every job or none. Each call is one Lua script
on Redis, so a batch costs one round trip. Concurrent Enqueue calls share script calls:
while one is in flight, the calls that arrive go out together when it returns, each
with its own result and error.

# Options

Options come from three places, field by field: the call's *EnqueueOpts, then the args'
own EnqueueOpts method when they implement ArgsWithEnqueueOpts, then the Config. A zero
field inherits.

# Ids and idempotency

Jobs get time-ordered ids from NewID unless the caller chooses one. Enqueueing a
caller-chosen id again with the same kind, fingerprint and queue is an idempotent
success that writes nothing (Result.Replayed), so an id derived from the work (an order
number, a webhook delivery id) makes retried enqueues safe. Args may derive it
themselves in their EnqueueOpts method.

An id replays only while its job is stored. A job that succeeds with Retention 0 (the
default) is deleted at once, and one that ended otherwise is evicted after its
retention; its id is then free, and enqueueing it again makes a new job that runs the
work again. Give such jobs a Retention at least as long as a redelivery may come late,
or make them unique by a key as well.

# Uniqueness

UniqueOpts make a job unique by (queue, kind, key): strictly, until the holder finishes,
or over a throttle window. A duplicate Enqueue is not an error: its Result describes the
holder, with Duplicate set. With Debounce the holder also moves to run Debounce after
the latest enqueue, with the latest args.

# Errors

Errors are typed and match with errors.As: *headgate.InvalidError (names the field),
*headgate.IDConflictError, *headgate.QuarantinedError, *headgate.BackpressureError (the
queue's limit on unfinished jobs is reached: back off and retry), and
*headgate.DuplicateError from EnqueueMany. On those errors nothing was written.

# Durability

Redis replicates asynchronously, so a job acknowledged just before its master fails can
be missing on the replica that takes over. Config.DurableReplicas makes each enqueue
wait until that many replicas have the jobs; when they do not confirm in time, the call
returns its results together with *headgate.NotDurableError, and enqueueing the same ids
again is safe. A Redis error during a call (a lost connection, a failover in progress)
leaves it unknown whether the jobs were written: retry with the same ids.
*/
package rqueue

// Package headgate is the job store of headgate, a background job queue for Go whose
// whole state lives in Redis.
//
// Every state transition of a job — enqueue, admit, ack, renew, checkpoint, reclaim,
// promote, evict, duty claim — is one atomic Lua script over the keys of one
// namespace (see lua/ and keys.go). Go code only validates input, loads the scripts and
// decodes their replies. Producers use package rqueue, workers package worker,
// operators package inspector, and tests package rqueuetest; Store is the layer they all
// stand on.
//
// # Namespaces
//
// All keys of a namespace start "hg:{<namespace>}:", so a namespace lives in one Redis
// Cluster slot and every script over it runs on one node. A namespace is the unit of
// atomicity and of placement: many namespaces spread over a cluster's shards.
//
// # Jobs
//
// A job (Envelope) moves through the states pending, scheduled, available, running,
// retryable and ends completed, archived, cancelled, undecodable or quarantined — or
// deleted. Admission takes turns across partitions (tenants) by deficit round robin,
// inside a partition by priority, then scheduled time, then id; it skips paused queues,
// charges rate classes (fleet-wide token buckets) the job's weight, and never shows a
// worker jobs pinned to another worker. Every admission increments the job's fence, and
// every write from a worker (Ack, Renew, Checkpoint, WriteOutput, WriteProgress) is
// accepted only from the current holder, so a worker that lost its lease cannot finish,
// fail or overwrite the job.
//
// # Time
//
// Scripts take time from Redis (TIME), never from a worker's clock, so leases, backoff,
// rate buckets and schedules agree across a fleet. Tests freeze and step the store clock
// of their namespace with FreezeClock and AdvanceClock instead of sleeping.
//
// # Errors
//
// Bad input gets *InvalidError naming the field and writes nothing. Refusals that
// depend on the store's state are typed too: *IDConflictError, *DuplicateError,
// *QuarantinedError, *BackpressureError, *LeaseRejectedError, *NotCancellableError, and
// ErrJobNotFound; match them with errors.As and errors.Is.
package headgate

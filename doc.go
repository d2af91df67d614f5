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
// worker jobs pinned to another worker. Each candidate is judged on its own: a job whose
// rate class lacks its weight is parked until the bucket refills, a job of a quarantined
// fingerprint is held, a crashed job waits for a probation slot; none of them blocks the
// jobs behind it in its partition. Every admission increments the job's fence, and
// every write from a worker (Ack, Renew, Checkpoint, WriteOutput, WriteProgress) is
// accepted only from the current holder, so a worker that lost its lease cannot finish,
// fail or overwrite the job.
//
// # The names a job takes on its way
//
// One job is seen through several types, each holding what one party needs:
//
//   - Envelope: what a producer enqueues (id, kind, payload, queue, partition, schedule,
//     policies). Package rqueue builds it from typed args.
//   - EnqueueResult: what Enqueue answers for each job: its state and scheduled time,
//     and whether the call replayed an earlier enqueue of it. rqueue.Result is the
//     producer's view of the same answer, duplicates included.
//   - Claim: what Admit hands a worker: the Envelope as stored, the lease (LeaseID,
//     ExpiresAt), the Fence and the Checkpoint of earlier attempts.
//   - Fence: a counter every admission of the job increments. A write that carries an
//     older fence comes from a worker that lost the job, and is refused.
//   - LeaseRef: job id, lease id and fence (Claim.LeaseRef): the holder's proof, passed
//     with every write from a worker (Ack, Renew, Checkpoint, WriteOutput,
//     WriteProgress); a stale one gets *LeaseRejectedError.
//   - worker.Job[T]: what a handler gets: the Claim with its payload decoded into the
//     args type T.
//   - Attempt and CrashAttempt (fields of Envelope): how many earlier attempts ended in a
//     retry, and how many were lost to an expired lease (the latter count against
//     StoreConfig.CrashLimit and can quarantine a fingerprint).
//   - Outcome: how an attempt ended, as acked: success, retry, skip, undecodable,
//     revoke, snooze, rate_limited, or lease_lost (applied by ReclaimExpired, never
//     acked). worker.Attempt is how one run by worker.Worker.Work ended: its Outcome, the
//     job's State after the ack and the errors.
//   - Reclaimed: what ReclaimExpired reports of a job whose lease expired.
//   - Blob and StoredBlob: the bytes, with a schema version, that a handler stores as
//     the job's result (Ack) or output (WriteOutput); StoredBlob is a Blob read back
//     (JobResult, JobOutput) with the fence and time of its write. Progress is the
//     handler's progress report.
//   - Job: the full stored record (GetJob, the inspector): the Envelope with its State,
//     Fence, lease, Checkpoint and times.
//
// # Time
//
// Scripts take time from Redis (TIME), never from a worker's clock, so leases, backoff,
// rate buckets and schedules agree across a fleet. Tests freeze and step the store clock
// of their namespace with FreezeClock and AdvanceClock instead of sleeping.
//
// # Periodic jobs
//
// A Schedule (a cron expression read in a time zone, or an interval; a job template; a
// misfire policy) lives in the namespace: AddSchedule, UpdateSchedule, PauseSchedule,
// ResumeSchedule, RemoveSchedule, RunScheduleNow. The holder of a duty lease fires it:
// PlanSchedule computes the due ticks in Go, FirePlan enqueues each tick's job
// (ScheduleJobID: cron:<name>:<tick>) and advances the schedule's mark in one script,
// fenced by the duty's tenure (ClaimDutyLease), so no tick fires twice. Workers do this
// as their cron duty; FireDueSchedules is that pass.
//
// # Errors
//
// Bad input gets *InvalidError naming the field and writes nothing. Refusals that
// depend on the store's state are typed too: *IDConflictError, *DuplicateError,
// *QuarantinedError, *BackpressureError, *LeaseRejectedError, *NotCancellableError, and
// ErrJobNotFound; match them with errors.As and errors.Is.
package headgate

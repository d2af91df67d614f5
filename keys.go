package headgate

import "strconv"

// keys names every Redis key of one namespace. All of them start with the prefix
// "hg:{<namespace>}:", so a namespace lives in one cluster slot and every script over it
// runs there. The store builds no key elsewhere, and tests and tools that look for a
// namespace's keys use KeyPattern (rqueuetest's conformance cases, which read or damage
// stored data directly, take the prefix from it in nsKey and spell only the key names
// after it; conformance_wf_registry.go spells the prefix of a registry kept apart).
// lua/lib.lua mirrors these functions for the keys scripts derive from the prefix, and
// TestLuaKeysMatchGo holds the two in step.
//
// Queue and worker names never contain ':' (see validateName), and the one segment that
// may (partition, id, fingerprint, class, duty name) always comes last, so no two keys
// of different kinds or names collide.
type keys struct{ prefix string }

func newKeys(namespace string) keys { return keys{prefix: "hg:{" + namespace + "}:"} }

// Prefix is passed to every script as KEYS[1]; it routes the call to the namespace's slot.
func (k keys) Prefix() string { return k.prefix }

// Job is a HASH: one job's fields (see JOB_FIELDS in lua/lib.lua and jobFromHash). A
// payload of 65 to 1,024 bytes is stored in 64-byte pieces ("payload", "pl1", ...; see
// payload_fields), so that a small job's hash keeps Redis's listpack encoding; "queue" is
// left out for the default queue and "created" while it equals "sched" (new_job_fields).
func (k keys) Job(id string) string { return k.prefix + "job:" + id }

// JobPattern is the SCAN pattern of every job hash of the namespace, and the length of
// the prefix before a job's id.
func (k keys) JobPattern() (string, int) {
	p := k.prefix + "job:"
	return p + "*", len(p)
}

// Errors is a LIST: a job's error and attempt-log history, newest last, capped.
func (k keys) Errors(id string) string { return k.prefix + "errors:" + id }

// Result is a HASH: a completed job's result {schema, bytes, fence, at}.
func (k keys) Result(id string) string { return k.prefix + "result:" + id }

// Output is a HASH: a job's latest output {schema, bytes, fence, at}.
func (k keys) Output(id string) string { return k.prefix + "output:" + id }

// Progress is a HASH: a job's latest progress {current, total, message, fence, at}.
func (k keys) Progress(id string) string { return k.prefix + "progress:" + id }

// Queues is a SET of every queue name that has had a job.
func (k keys) Queues() string { return k.prefix + "queues" }

// Counts is a HASH: state -> number of the queue's jobs in it.
func (k keys) Counts(queue string) string { return k.prefix + "q:" + queue + ":counts" }

// Ring is a ZSET of the queue's partitions with unpinned available work, scored by turn order.
func (k keys) Ring(queue string) string { return k.prefix + "q:" + queue + ":ring" }

// RingState is a HASH of the ring's round-robin state: "turn" -> partition whose turn is
// in progress, "d:<partition>" -> its unspent credit less "b", "b" -> the weight units of
// rounds skipped by the deficit round robin shortcut (added to every stored credit), "cr"
// and "cn" -> consecutive turns that could spend nothing and the fewest rounds one of them
// still needs (see lua/admit.lua).
func (k keys) RingState(queue string) string { return k.prefix + "q:" + queue + ":drr" }

// Partition is a ZSET of a partition's unpinned available jobs, all scored 0, members
// ranked by priority, scheduled time and id: an 11-byte binary rank, then the id (see
// rank in lua/lib.lua; members of 25 digits, then the id, are read too: legacy_rank).
func (k keys) Partition(queue, partition string) string {
	return k.prefix + "q:" + queue + ":p:" + partition
}

// PinnedRing is a ZSET like Ring, of the partitions with work pinned to one worker.
func (k keys) PinnedRing(queue, worker string) string {
	return k.prefix + "q:" + queue + ":w:" + worker + ":ring"
}

// PinnedRingState is a HASH like RingState, for PinnedRing.
func (k keys) PinnedRingState(queue, worker string) string {
	return k.prefix + "q:" + queue + ":w:" + worker + ":drr"
}

// PinnedPartition is a ZSET like Partition, of the jobs pinned to one worker.
func (k keys) PinnedPartition(queue, worker, partition string) string {
	return k.prefix + "q:" + queue + ":w:" + worker + ":p:" + partition
}

// Wake is a LIST of wake-up tokens pushed when the queue gets available work; idle
// workers block on it. Capped at a few tokens.
func (k keys) Wake(queue string) string { return k.prefix + "q:" + queue + ":wake" }

// Scheduled is a ZSET of scheduled and retryable job ids scored by due time (ms).
func (k keys) Scheduled() string { return k.prefix + "scheduled" }

// Leases is a ZSET of running job ids scored by lease expiry (ms).
func (k keys) Leases() string { return k.prefix + "leases" }

// Retained is a ZSET of terminal job ids scored by eviction time (ms).
func (k keys) Retained() string { return k.prefix + "retained" }

// Unique is a HASH: strict unique field -> holder job id.
func (k keys) Unique() string { return k.prefix + "unique" }

// Throttle is a HASH: throttle unique field -> holder job id.
func (k keys) Throttle() string { return k.prefix + "throttle" }

// ThrottleExpiry is a ZSET of throttle unique fields scored by the end of their window (ms).
func (k keys) ThrottleExpiry() string { return k.prefix + "throttle:expiry" }

// Quarantine is a HASH: quarantined fingerprint -> id of the job that crashed into it.
func (k keys) Quarantine() string { return k.prefix + "quarantine" }

// Held is a SET of available job ids set aside because their fingerprint is quarantined.
func (k keys) Held(fingerprint string) string { return k.prefix + "held:" + fingerprint }

// Parked is a ZSET of available jobs of a rate class set aside while its bucket lacks
// their weight, scored by weight; admission returns them to their partitions when the
// bucket refills.
func (k keys) Parked(class string) string { return k.prefix + "parked:" + class }

// Starved is a ZSET of rate classes with parked jobs, scored by the store time (ms) at
// which the bucket will hold the lightest one's weight (+inf: not at the current limit).
func (k keys) Starved() string { return k.prefix + "starved" }

// FingerprintsRunning is a HASH: fingerprint -> running jobs admitted under the
// namespace's per-fingerprint in-flight cap (policy field fp_inflight).
func (k keys) FingerprintsRunning() string { return k.prefix + "fprunning" }

// Admission is a STRING: what the admission under a lease id leased, "<job id>\x1f<fence>"
// pairs joined by \x1f, kept for the lease duration, so that a repeat of the call (a
// client that resent it after losing the reply) gets the same jobs back (lua/admit.lua),
// and a repeated ack that deleted its job is recognized (lua/ack.lua).
func (k keys) Admission(leaseID string) string { return k.prefix + "admission:" + leaseID }

// Paused is a SET of paused queue names.
func (k keys) Paused() string { return k.prefix + "paused" }

// Limits is a HASH: queue -> the most unfinished jobs it accepts.
func (k keys) Limits() string { return k.prefix + "limits" }

// Rate is a HASH: a rate class's token bucket {tokens, burst, limit, window, refilled}.
func (k keys) Rate(class string) string { return k.prefix + "rate:" + class }

// Duty is a HASH: a maintenance duty's lease {holder, exp}.
func (k keys) Duty(name string) string { return k.prefix + "duty:" + name }

// Format is a STRING: the storage format the namespace is written in (StorageFormat),
// set by the first store to use the namespace and checked once by every store after.
func (k keys) Format() string { return k.prefix + "format" }

// Clock is a STRING: the frozen store time in ms, when a test froze it.
func (k keys) Clock() string { return k.prefix + "clock" }

// Policy is a HASH: the namespace's fleet-wide policy (backoff, crash limit, retention
// defaults, snooze limit, per-fingerprint in-flight cap); absent fields take the
// defaults the store was configured with.
func (k keys) Policy() string { return k.prefix + "policy" }

// Corrupt is a HASH: job id -> why its stored data could not be used (wrong key type, unparseable or impossible field), for jobs a script parked instead of moving.
func (k keys) Corrupt() string { return k.prefix + "corrupt" }

// Cancelled is a pub/sub channel, not a key: the cancel script publishes on it the lease
// of each running job it cancels, so that the holder cancels the handler at once. Its
// name carries the namespace's hash tag like every key, so a sharded publish would stay
// in the namespace's slot.
func (k keys) Cancelled() string { return k.prefix + "cancelled" }

// KeyPattern is the SCAN (or KEYS) pattern that matches every key of a namespace, and
// nothing outside it: tests and tools that must find or delete a namespace's keys use it
// rather than spelling the prefix again.
func KeyPattern(namespace string) string { return newKeys(namespace).Prefix() + "*" }

// Workflow store keys.
//
// Two-part members (a workflow id and a timer id, a sort key and an id) are joined by
// memberSep, a control character no validated name contains, so the parts never blur
// and members sort as their parts do.

// memberSep joins the parts of a ZSET member or HASH field (0x1f, below every character
// a validated name may hold).
const memberSep = "\x1f"

// Workflow is a HASH: one workflow id's row {head, status, type, run, parent, prun, pkg,
// started, closed, updated}; kept by every append so no listing folds a history.
func (k keys) Workflow(id string) string { return k.prefix + "wf:" + id }

// WorkflowHistory is a HASH: seq -> "<recorded ms>\n<event body>", seq 1..head.
func (k keys) WorkflowHistory(id string) string { return k.prefix + "wfh:" + id }

// WorkflowRuns is a LIST of the workflow id's runs in start order, each
// "<run id>\x1f<status>\x1f<started ms>\x1f<closed ms>".
func (k keys) WorkflowRuns(id string) string { return k.prefix + "wfruns:" + id }

// WorkflowTimers is a HASH: timer id -> "<fire ms> <armed seq>", the workflow's armed timers.
func (k keys) WorkflowTimers(id string) string { return k.prefix + "wftimers:" + id }

// WorkflowIDs is a ZSET of every workflow id with a history, all scored 0 (id order).
func (k keys) WorkflowIDs() string { return k.prefix + "wfids" }

// WorkflowsInStatus is a ZSET of the workflow ids whose row is in status, all scored 0.
func (k keys) WorkflowsInStatus(status string) string { return k.prefix + "wfstatus:" + status }

// WorkflowQuery is a ZSET of started workflows, all scored 0, members
// "<started ms, 15 digits>\x1f<id>", over one selection: "all", "type:<t>",
// "status:<s>", "ts:<s>:<t>" or "parent:<workflow id>" (the variable part comes last).
func (k keys) WorkflowQuery(selection string) string { return k.prefix + "wfq:" + selection }

// Timers is a ZSET of armed timers scored by fire time (ms), members
// "<workflow id>\x1f<timer id>": equal fire times sort by workflow id, then timer id.
func (k keys) Timers() string { return k.prefix + "timers" }

// TimersArmed is a pub/sub channel, not a key: arming a timer that fires before every
// other armed one publishes its fire time (ms) on it, so that the timers duty, asleep
// until the earliest fire time it saw, looks again.
func (k keys) TimersArmed() string { return k.prefix + "timers:armed" }

// Visibility is a HASH: a workflow id's visibility row {run, type, status, started,
// closed, parent, pkg, memo, updated}.
func (k keys) Visibility(id string) string { return k.prefix + "vis:" + id }

// VisibilityIndex is a ZSET like WorkflowQuery over visibility rows, selection "all",
// "type:<t>", "status:<s>" or "ts:<s>:<t>".
func (k keys) VisibilityIndex(selection string) string { return k.prefix + "visq:" + selection }

// Packages is a HASH: "<workflow type>\x1f<content hash>" -> "<deployed ms>\n<record>".
func (k keys) Packages() string { return k.prefix + "pkgs" }

// PackageIndex is a ZSET of packages, all scored 0, members
// "<deployed ms, 15 digits>\x1f<workflow type>\x1f<content hash>".
func (k keys) PackageIndex() string { return k.prefix + "pkgidx" }

// PackageRoutes is a HASH: workflow type -> content hash new runs of the type start on.
func (k keys) PackageRoutes() string { return k.prefix + "routes" }

// PackageRouteIndex is a ZSET of routed workflow types, all scored 0 (type order).
func (k keys) PackageRouteIndex() string { return k.prefix + "routeidx" }

// Deployments is a HASH: worker deployment name -> record bytes.
func (k keys) Deployments() string { return k.prefix + "deploys" }

// DeploymentIndex is a ZSET of worker deployment names, all scored 0 (name order).
func (k keys) DeploymentIndex() string { return k.prefix + "deployidx" }

// VersionDeployments is a HASH of counts over the worker deployments: "n:<version>" ->
// how many list the version, "a:<version>" -> how many of those are active. A version
// with deployments and no active one is draining: no new run starts on it.
func (k keys) VersionDeployments() string { return k.prefix + "verdeploys" }

// VersionRuns is a HASH: package version -> how many runs on it are open (not closed),
// kept by the scripts that open and close runs; a version with none has no field. A
// workflow's row names the version its open run is counted under ('vopen').
func (k keys) VersionRuns() string { return k.prefix + "verruns" }

// Workloops is a HASH: workloop id -> record bytes.
func (k keys) Workloops() string { return k.prefix + "loops" }

// WorkloopIndex is a ZSET of workloop ids, all scored 0 (id order).
func (k keys) WorkloopIndex() string { return k.prefix + "loopidx" }

// WorkloopsDue is a ZSET of the workloop ids that have a next check, scored by it (ms).
func (k keys) WorkloopsDue() string { return k.prefix + "loopdue" }

// InvariantRecords is a LIST: a workloop invariant's generations, current first, each
// "<recorded ms>\n<record>". The two names are joined by memberSep, so either may hold ':'.
func (k keys) InvariantRecords(loopID, invariant string) string {
	return k.prefix + "inv:" + invariant + memberSep + loopID
}

// registryKeys names the keys of the namespace registry, which spans namespaces and so
// has a slot of its own: "hg:{registry}:" for the deployment's registry, or
// "hg:{registry:<scope>}:" for a registry kept apart (tests give each case one). Its key
// names (nsrec:, nsidx) are none of a namespace's, so a namespace named "registry"
// shares the slot but no key (except the store clock, which the registry reads too).
func registryKeys(scope string) keys {
	if scope == "" {
		return keys{prefix: "hg:{registry}:"}
	}
	return keys{prefix: "hg:{registry:" + scope + "}:"}
}

// NamespaceRecord is a HASH: a registered namespace {name, origin, state, placement,
// config, created, seen}. Under registryKeys.
func (k keys) NamespaceRecord(name string) string { return k.prefix + "nsrec:" + name }

// NamespaceIndex is a ZSET of registered namespaces, all scored 0, members
// "<created ms, 15 digits>\x1f<name>". Under registryKeys.
func (k keys) NamespaceIndex() string { return k.prefix + "nsidx" }

// Workflow runtime keys.
//
// A workflow's row (Workflow) also holds the runtime's fields: queue and part (where its
// tasks run), task (the id of its outstanding task job), tasks (task ids minted),
// runseq (the seq of the current run's workflow_started event), cancelreq (the runseq
// of the run a cancel request is pending for; a repeat of it writes nothing) and
// pausereq ("paused" or "resumed": the last pause or resume request waiting in the
// inbox while a task runs; a repeat of it writes nothing).

// WorkflowInbox is a LIST of events from outside the workflow's code (signals, timers
// fired, children's ends, operators' requests) that arrived while its task ran, each
// "<kind>\n<recorded ms>\n<event body>"; the task's commit appends them to the history.
func (k keys) WorkflowInbox(id string) string { return k.prefix + "wfinbox:" + id }

// WorkflowSteps is a HASH: step key ("charge#1") -> the id of the step job the step
// waits for, for the steps of the workflow's run that run as jobs of their own. A step
// job's commit is refused unless its step still waits for it there.
func (k keys) WorkflowSteps(id string) string { return k.prefix + "wfsteps:" + id }

// WorkflowClosed is a pub/sub channel, not a key: the commit that closes a workflow's
// run publishes its status on it, so that a waiter for the outcome need not poll.
func (k keys) WorkflowClosed(id string) string { return k.prefix + "wfclosed:" + id }

// Periodic jobs.

// Schedule is a HASH: one schedule {def (JSON definition), rev, mark, paused, created,
// updated, fired, skipped, refused, runs, last_tick, last_job, last_skipped,
// last_refused, last_refusal}.
func (k keys) Schedule(name string) string { return k.prefix + "cron:" + name }

// Schedules is a ZSET of every schedule name, all scored 0 (name order).
func (k keys) Schedules() string { return k.prefix + "cronnames" }

// SchedulesDue is a ZSET of the schedules that are not paused, scored by when a worker
// looks at each next (ms): its next tick, or at once after a change.
func (k keys) SchedulesDue() string { return k.prefix + "crondue" }

// Event counters.

// Counters is a HASH of event totals the scripts keep for metrics (lua/lib.lua
// count_event): "lease_rejected", "reclaimed", "rate_limited:<class>",
// "backpressure:<queue>", and the outcomes of acks, "completed:<queue>" and
// "failed:<queue>" (count_outcome). Read with one HGETALL (Store.Gauges).
func (k keys) Counters() string { return k.prefix + "counters" }

// Worker heartbeats.
//
// Every worker writes its heartbeat each beat (lua/heartbeat.lua); why.lua and the
// inspector read them to tell which workers are live.

// Workers is a HASH: worker id -> its latest heartbeat, a JSON record (heartbeatJSON in
// heartbeat.go).
func (k keys) Workers() string { return k.prefix + "workers" }

// WorkersSeen is a ZSET of worker ids scored by their last heartbeat (store time, ms).
func (k keys) WorkersSeen() string { return k.prefix + "workers:seen" }

// QueueWorkers is a ZSET of the workers that serve a queue, scored by the store time
// (ms) until which their last heartbeat keeps them live.
func (k keys) QueueWorkers(queue string) string { return k.prefix + "q:" + queue + ":workers" }

// Job indexes: kept by every script that moves a job (index_move in lua/lib.lua), read by
// ListJobs and the bulk verbs. A kind, partition, tag or fingerprint may hold ':', so it
// comes after the state, and a filter's dimension and value after memberSep.

// JobIndex is a ZSET of the queue's jobs of one kind in one state ("held" for available
// jobs held back by a quarantined fingerprint), scored by the store time (ms) at which
// each entered the state; equal times sort by id.
func (k keys) JobIndex(queue string, state State, kind string) string {
	return k.prefix + "q:" + queue + ":ix:" + string(state) + ":" + kind
}

// JobFilterIndex is a ZSET like JobIndex, of its jobs that have one partition (dim
// "p"), tag ("t") or fingerprint ("f").
func (k keys) JobFilterIndex(queue string, state State, kind, dim, value string) string {
	return k.JobIndex(queue, state, kind) + memberSep + dim + memberSep + value
}

// Kinds is a SET of every kind the queue has had a job of.
func (k keys) Kinds(queue string) string { return k.prefix + "q:" + queue + ":kinds" }

// PartitionCounts is a HASH: state -> number of the queue's jobs of the partition in it
// ("held" like Counts; kept for named partitions only).
func (k keys) PartitionCounts(queue, partition string) string {
	return k.prefix + "q:" + queue + ":pc:" + partition
}

// PartitionCountsNamed is a HASH like PartitionCounts, the sums of every named
// partition's: the jobs of no partition are what Counts holds beyond them, so that they
// pay no count write of their own.
func (k keys) PartitionCountsNamed(queue string) string { return k.prefix + "q:" + queue + ":pcnamed" }

// AdmittedIn is a HASH: partition -> jobs of the queue admitted in one minute of store
// time (minute = unix ms / 60000), and admittedAll -> all of them; it expires an hour and
// a minute after its last admission (lua/admit.lua). PartitionStats sums the last hour's.
func (k keys) AdmittedIn(queue string, minute int64) string {
	return k.prefix + "q:" + queue + ":adm:" + strconv.FormatInt(minute, 10)
}

// admittedAll is AdmittedIn's field of every partition's admissions: no partition name
// holds a control character.
const admittedAll = "\x1f"

// Series is a ZSET: the queue's throughput series, snapshots of its outcome counters
// (completed:<queue>, failed:<queue> of Counters) scored by the store time (ms) of each,
// members "<ms>:<completed>:<failed>", the newest kept (lua/record_series.lua).
func (k keys) Series(queue string) string { return k.prefix + "q:" + queue + ":series" }

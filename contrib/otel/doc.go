// Package headgateotel traces headgate jobs with OpenTelemetry, from the enqueue to
// each attempt. It lives in a module of its own so that the headgate library does not
// depend on OpenTelemetry.
//
// EnqueueMiddleware (for rqueue.Config.EnqueueMiddleware) starts a PRODUCER span
// "send <queue>" per batch, a child of the caller's span, and writes its W3C trace
// context into each job as a meta tag (TraceparentTag, and TracestateTag when the
// caller's trace state fits a tag) when the span is sampled (Config.PropagateUnsampled:
// every span's): tags travel with the job through every transition, and a meta tag has
// no index. WorkerMiddleware (for worker.Config.Middleware, first)
// starts a CONSUMER span "process <queue>" per attempt, linked to the producer's span
// (or, with Config.Child, its child), with the messaging attributes of the OpenTelemetry
// semantic conventions (messaging.system=headgate, messaging.destination.name,
// messaging.operation.type and messaging.operation.name at the start, for samplers;
// messaging.message.id) and headgate.kind, headgate.attempt (the attempt's 1-based
// number, as the worker's log lines and the job's history count it), headgate.fence, and
// headgate.partition and headgate.rate_class when the job has them. An attempt that did
// not succeed has headgate.outcome (a success has none: its span stays within eight
// attributes, which the SDK ends without building a map); one that fails (retry) or
// panics sets the span's status to Error. StartStep starts a child span per step of a
// handler.
//
// # Workflows
//
// On a workflow task WorkerMiddleware also installs a workflow.Observer: the task gets an
// INTERNAL span "workflow <type>" under the attempt's (headgate.workflow.id, .run_id,
// .type, .history_events), and each run of a step's function an INTERNAL span
// "step <name>" under the task's (headgate.step, headgate.step.key, .occurrence,
// .attempt; Error when the attempt failed). A step a replay returns from the history
// has no span.
//
// # Metrics
//
// The same set as headgateprom, as OpenTelemetry instruments (dotted names; an
// OpenTelemetry-to-Prometheus exporter turns headgate.jobs.processed into
// headgate_jobs_processed_total and headgate.job.run, in seconds, into
// headgate_job_run_seconds). Metrics has the worker and producer instruments
// (headgate.jobs.processed, headgate.job.run, headgate.job.wait, headgate.jobs.in_flight,
// headgate.leases.lost, headgate.jobs.enqueued), recorded by its WorkerMiddleware and
// EnqueueMiddleware. headgate.jobs.processed and headgate.jobs.in_flight are
// asynchronous (a counter and an up-down counter, exported as the same sums), read at
// each collection from counts the middleware keeps: each synchronous measurement costs
// the SDK an attribute set's lookup and normalization, and they were three of an
// attempt's five. ObserveNamespace registers observable instruments of a namespace's
// state read with Store.Gauges at each collection: headgate.jobs,
// headgate.queue.{unfinished_jobs,paused,enqueue_limit,available_partitions,oldest_available},
// headgate.partition.wait, headgate.quarantined_fingerprints, headgate.rate_class.tokens,
// and the counters the scripts keep: headgate.lease_rejections, headgate.reclaims,
// headgate.rate_limited, headgate.backpressure_rejections.
package headgateotel

// Package headgateprom exports headgate's metrics to Prometheus. It lives in a module
// of its own so that the headgate library does not depend on the Prometheus client.
//
// Two parts, registered on any prometheus.Registerer:
//
//   - Collector reads a namespace's state at each scrape with Store.Gauges: a few plain
//     reads (the per-queue counts and the event counters the scripts keep, the paused
//     set, the limits, the quarantine's size, the named rate buckets, the next job of
//     each queue's first partitions), no script, and a number of commands that grows
//     with queues, rate classes and PartitionsPerQueue, never with jobs. One process (or the
//     headgate-metrics command) runs it per namespace; every worker need not.
//   - Metrics counts what workers and producers do, through a worker.Middleware and an
//     rqueue.EnqueueMiddleware: attempts by outcome, run and wait times, jobs in flight,
//     lost leases and enqueues. Each process exports its own;
//     Prometheus sums them across the fleet.
//
// # Metrics
//
// From the Collector (labelled namespace; the _total ones are counters the scripts keep
// fleet-wide, the others gauges):
//
//	headgate_jobs{queue,state}                 jobs by state (every state, 0 included)
//	headgate_queue_unfinished_jobs{queue}      jobs not yet terminal (what a limit bounds)
//	headgate_queue_paused{queue}               1 while the queue is paused
//	headgate_queue_enqueue_limit{queue}        the queue's enqueue limit, when it has one
//	headgate_quarantined_fingerprints          fingerprints in quarantine
//	headgate_rate_class_tokens{class}          tokens a configured rate class holds now
//	headgate_lease_rejections_total            worker writes refused: the lease was no longer theirs
//	headgate_reclaims_total                    jobs taken back after their lease expired
//	headgate_rate_limited_total{class}         jobs set aside because their rate class lacked tokens
//	headgate_backpressure_rejections_total{queue}  enqueue calls refused by a queue's limit
//	headgate_jobs_completed_total{queue}           jobs acked as a success, by every worker
//	headgate_jobs_failed_total{queue}              attempts that failed (retried, archived,
//	                                               undecodable, a lease reclaimed), fleet-wide
//	headgate_queue_available_partitions{queue}     partitions with available (unpinned) work
//	headgate_queue_oldest_available_seconds{queue} longest wait of the partitions read
//	headgate_partition_wait_seconds{queue,partition} wait of each partition's next job, for
//	                                           the first PartitionsPerQueue partitions of
//	                                           the queue's ring (the ones admitted next)
//
// From Metrics:
//
//	headgate_jobs_processed_total{queue,kind,outcome}  attempts ended, by outcome: success, retry, skip,
//	                                                   snooze, revoke, rate_limited, undecodable, and
//	                                                   lease_lost, cancelled or hand_back (handed back
//	                                                   at shutdown) for attempts whose result the
//	                                                   worker dropped
//	headgate_job_run_seconds{queue,kind}               handler run time (histogram)
//	headgate_job_wait_seconds{queue,kind}              time from due to admitted, on the store clock (histogram)
//	headgate_jobs_in_flight                            attempts running in this process
//	headgate_leases_lost_total{queue,kind}             attempts whose lease was lost while they ran
//	headgate_jobs_enqueued_total{queue,kind}           jobs written (replays and duplicates not counted)
//
// The command github.com/headgate/headgate/contrib/prometheus/cmd/headgate-metrics
// serves a Collector over HTTP for one namespace.
package headgateprom

// Package worker runs headgate jobs: it admits them from a namespace's queues, runs
// their handlers on a fixed pool of goroutines, renews their leases, acks how they ended
// and, on one worker of the fleet at a time, runs the store's maintenance.
//
// A worker is created with New, given handlers, and run until its context is done:
//
//	type EmailArgs struct {
//		To string `msgpack:"to"`
//	}
//
//	func (EmailArgs) Kind() string { return "email" }
//
//	w, err := worker.New(rdb, &worker.Config{Namespace: "shop", Concurrency: 20})
//	if err != nil {
//		return err
//	}
//	worker.Handle(w, func(ctx context.Context, job *worker.Job[EmailArgs]) error {
//		return send(ctx, job.Args.To)
//	})
//	return w.Run(ctx) // until ctx is done, then a graceful shutdown
//
// # Handlers
//
// Handle registers a typed handler for the kind of its Args. A job's payload is the
// msgpack encoding of its args, as the rqueue client writes it; a payload that does not
// decode parks the job as undecodable (terminal, visible to operators) and logs an
// ERROR. A job whose kind has no handler on this worker is not the job's fault (a
// rolling deploy may be adding the kind): the attempt fails with
// `no handler for kind "K" on worker ID`, the job is retried with backoff like any
// failure and archived when its attempts are spent, and the worker logs an ERROR.
// HandleFunc registers a handler that gets the store's Claim with the payload as bytes.
//
// The worker logs one line per failed attempt through Config.Logger, with the fields
// job_id, kind, queue, partition and attempt (the attempt's 1-based number, as the job's
// history and the CLI count it: Job.Attempt+1, so a first attempt logs attempt=1): WARN for a handler's error, ERROR for a
// panic (with its stack), a missing handler or an undecodable payload. A failure that
// repeats (same kind and error) is logged once per Config.LogRepeatInterval, the next
// line counting those left out; the job's error history keeps every attempt. The worker
// holding the reclaim duty logs an ERROR for each job quarantined at the crash limit.
//
// # Middleware and error handler
//
// Config.Middleware wraps every attempt and the middleware passed to Handle or
// HandleFunc wraps one kind's, inside the worker's (see Middleware for the order):
// the place for metrics, tracing and context values. Config.ErrorHandler sees each
// failed attempt (an error that would retry the job, or a panic) and may end it
// otherwise: as a success, a Skip, a RetryAfter, a Snooze or with another error.
//
// What the handler returns decides how the attempt ends: nil is a success; Snooze, Skip,
// Revoke, RateLimited and RetryAfter end it their way; any other error is retried after
// the store's exponential backoff, and archived when the job's attempts are spent. A
// panic is retried with its stack in the job's error history. Config.JobTimeout bounds
// an attempt.
//
// Within a handler, SetResult and Log record what the ack carries (no round trip of
// their own); WriteOutput and WriteProgress store what inspectors see while the job
// runs. Step runs a named step once across attempts: a later attempt skips the steps done,
// and a crash is charged to the step in progress.
//
// # Admission and acks
//
// The worker admits jobs in batches of up to its free slots, one store call each, and
// acks finished attempts in batches, one call each: a batch goes out when no job is
// running any more, when its first ack is a millisecond old, or when it is full. With
// many short jobs a round trip carries dozens of jobs either way.
//
// An idle worker blocks on the queues' wake-up lists, on a connection of its own, so a
// newly enqueued job starts within a round trip or two; it admits again at least every
// second in case a wake-up was missed.
//
// # Leases
//
// Every admitted job is leased to the worker for Config.Lease. The worker renews all its
// leases every Lease/3 in one call. When a lease is lost (it expired and was reclaimed)
// the handler's context is cancelled with ErrLeaseLost and whatever it returns is
// dropped: the store would refuse it anyway. When an operator cancels a running job, the
// cancel script publishes it on the namespace's cancel channel, to which every worker
// subscribes on a connection of its own; the holder cancels the handler's context with
// ErrCancelled within a round trip (a worker that missed the push finds out at its next
// renewal, with the same cause).
//
// # Maintenance
//
// Five duties keep the store moving: reclaim (expired leases become retryable, or
// quarantined at the crash limit), promote (due scheduled and retryable jobs become
// available; the duty sleeps until the next due time), evict (finished jobs past their
// retention are deleted), timers (due durable workflow timers fire and their workflows'
// next tasks are enqueued; package workflow) and cron (the due ticks of the namespace's
// schedules become jobs, see headgate.Schedule: a worker needs no schedule
// configuration). Each is a named lease in the store: one worker of the fleet holds it
// and runs the loop, the others stand by and take over when it stops or dies. The cron
// duty's writes are fenced by its tenure, so a holder that lost the lease fires nothing.
//
// # Shutdown
//
// Stop (or the end of Run's context) stops admission and maintenance, gives up the
// duties, and waits up to Config.ShutdownTimeout for running jobs. Jobs still running
// then are cancelled (context.Cause is ErrShutdown) and handed back at once: available
// to other workers, no attempt or crash counted.
//
// # Redis failures
//
// Start and Run first wait up to Config.StartTimeout for Redis to answer, and fail with
// an error naming the address (and the last failure, such as the dial's) when it does
// not; a Redis that refuses the client's credentials fails them at once. A worker that loses Redis later backs off
// with jitter, from 50ms up to 5s, and resumes by itself; it logs one WARN when Redis
// stops answering and one INFO when it answers again, not a line per retry. It keeps retrying the ack of a finished job while the job's lease lasts, and
// cancels handlers whose leases ran out meanwhile by its own clock. On a Redis Cluster,
// the store has the client look up a slot's master again after a failed call, so work
// resumes on the promoted replica after a failover.
//
// # Running jobs synchronously
//
// Work admits up to n jobs and runs them to the end on the calling goroutine, with the
// same handlers and outcome mapping, then acks them in one call: no goroutines, no
// maintenance. Tests and tools step a worker with it; rqueuetest.Drain does.
package worker

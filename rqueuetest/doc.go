// Package rqueuetest is headgate's test kit: what tests of code that enqueues jobs
// (producers) and code that runs them (handlers) need, on an embedded Redis or a real
// one.
//
// It has two parts, for two audiences:
//
//   - The kit, for tests of programs that use headgate: New, NewRedis, NewCluster,
//     NewWithConfig and Kit; Handle and HandleFunc; the Require* checks,
//     EnqueueWithoutUniqueness, DrainWorker and WorkJob; Main. The sections below up to
//     the conformance suite describe it. This is the API for users.
//   - The conformance suite, for headgate's own store and anything that claims to
//     behave like it: Exercise and its parts, the Assert* proofs, and the store makers
//     they run on (NewStore, NewMiniredisStore, NewRedisStore, NewClusterStore,
//     FreshNamespace). A program that uses headgate has no need of it.
//
// # Kits
//
// New returns a Kit for one test: a producer Client and the Store of a fresh namespace
// on an embedded miniredis, so tests need no Redis server. NewRedis does the same on a
// real redis-server (HEADGATE_TEST_REDIS, or one the test binary starts) and NewCluster
// on a Redis Cluster; NewWithConfig takes a Redis client and the producer's Config.
// Whatever the backend, the namespace is the test's alone and is deleted when the test
// ends, so tests run in parallel on one server. A package whose tests start servers
// runs them with Main.
//
//	func TestSignUp(t *testing.T) {
//		t.Parallel()
//		kit := rqueuetest.New(t)
//		app := NewApp(kit.Client) // the code under test enqueues through kit.Client
//		...
//	}
//
// # The store clock
//
// Schedules, backoff, leases and rate buckets run on the store's clock (Redis's time),
// never the host's. Kit.Freeze stops it at a chosen time, Kit.Advance steps it and
// Kit.Unfreeze lets it run; they behave the same on miniredis and on a real server, and
// fail the test when the store refuses. With the clock frozen a test is deterministic
// and never sleeps for time to pass.
//
// # Testing producers
//
// RequireEnqueued checks that the store holds jobs as described by an Enqueued (kind,
// queue, payload, scheduled time, partition, state, count); RequireEnqueuedArgs compares
// typed args as a worker would decode them; RequireNotEnqueued and
// RequireNotEnqueuedArgs rule jobs out. A failure says what was wanted, how many of the
// store's jobs matched, and lists what the store does hold, payloads decoded:
//
//	rqueuetest.RequireEnqueued: want a job with kind "send_email", queue "priority"; 0 of the 2 jobs in namespace "TestSignUp.3f9a0c1b2d4e" match
//	  what IS enqueued (* = matches):
//	      id=01JY... kind="send_email" queue="default" partition="" state=available scheduled_at=2025-06-01T09:00:00.000Z payload={"to":"ada@example.com"}
//	      ...
//
// EnqueueWithoutUniqueness seeds jobs that production enqueues as unique (several
// holders of one key, say) for this one call, leaving the store's rules alone.
//
// # Testing handlers
//
// Handle and HandleFunc register handlers on a kit. Kit.Drain runs them in a real worker
// until nothing is left to run, optionally stepping the frozen clock to each next due
// job (DrainOpts.AdvanceToDue) so that retries, snoozes and schedules play out, and
// returns the attempts by outcome. DrainWorker does the same with a worker the test
// built itself (worker.New, its handlers registered), the way the program builds it.
// WorkJob runs one attempt of one job through a handler, in a private namespace, and
// returns the outcome and the job's state after it. Either way the handler runs as in
// production: worker.Step, worker.SetResult and the other job helpers work, and its
// return value goes through the worker's outcome mapping and the store's ack.
//
// They run jobs with worker.Worker.Work: synchronously, on the calling goroutine, one
// at a time in admission order, and without the worker's loops. Nothing is waited for
// and nothing polls, so a Drain on a frozen clock is deterministic. Called from the
// test's goroutine, they run the handlers there: t.Fatal in a handler stops the test as
// anywhere else in it, and handlers may share the test's variables without locks. A Drain works in rounds: each promotes the due jobs, runs up to
// DrainOpts.Batch of them and acks them together, until a round finds nothing to run.
// A job that a handler hands back rate limited runs at most once a round, and Drain
// stops when nothing but such jobs is left (see Kit.Drain).
//
// Kit.NewWorker returns a worker of the kit's namespace, with the kit's handlers, for
// tests that run one the production way (Start, Stop).
//
// # The conformance suite (for store backends, not for programs)
//
// Exercise runs the whole job contract — every transition, the admission and enqueue
// policies, the refusal of invalid input, and the live-backend proofs
// AssertStickyRouting and AssertEnqueueBackpressure — against stores made by a
// NewStoreFunc, each case as a parallel subtest on a fresh namespace. A test that runs
// the contract on several backends runs ExerciseBackend on each (everything that reaches
// a script) and ExerciseValidation (refusals Go decides before any script runs) on one.
// NewStore makes a store in a fresh namespace on any client, deleted at cleanup;
// NewMiniredisStore, NewRedisStore and NewClusterStore do so on the test binary's
// shared embedded miniredis, redis-server and Redis Cluster.
//
// The suite's cases live in the conformance_<transition>.go files, named like the
// transition's script and its Go file (lua/ack.lua, ack.go, conformance_ack.go); a
// transition with many cases adds files of a topic (conformance_ack_history.go), and the
// cases of reads are named after the Go file of the read (conformance_queue_stats.go).
// The few that span transitions say so (conformance_validation.go: the refusals Go
// decides for calls of many transitions). Nothing in them is exported.
// ExerciseWorkflowStore runs the workflow store's contract (histories, listings, timers,
// visibility, the namespace registry, packages, worker deployments, workloops) the same
// way, from conformance_wf*.go. The root package's TestFilesNamedAfterTransitions holds
// the files to these names.
package rqueuetest

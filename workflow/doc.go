// Package workflow runs durable workflows on headgate: ordinary Go functions whose
// progress survives crashes of their workers, that sleep for days and wait for signals
// without holding a goroutine, with Redis as their only store.
//
// # Writing a workflow
//
// A workflow is a function func(ctx workflow.Context, in In) (Out, error) registered
// under a type on a worker.Worker, which then serves the type's tasks beside its jobs:
//
//	workflow.Register(w, "checkout", func(ctx workflow.Context, o Order) (Receipt, error) {
//		charge, err := workflow.Step(ctx, "charge", func(ctx context.Context) (string, error) {
//			return payments.Charge(ctx, o)
//		}, nil)
//		if err != nil {
//			return Receipt{}, err
//		}
//		if err := workflow.Sleep(ctx, "cooling-off", 14*24*time.Hour); err != nil {
//			return Receipt{}, err
//		}
//		tracking, _, err := workflow.Await[string](ctx, "shipped", 0)
//		return Receipt{Charge: charge, Tracking: tracking}, err
//	})
//
// Start it with a Client (Start with an id: starting an id that exists returns its
// run), signal it (Signal), cancel it, and wait for its outcome with Result, which
// subscribes rather than polls.
//
// # How it runs
//
// Each workflow task re-runs the function from the top. What the code did before is in
// the run's history: Step returns a recorded result without calling its function,
// Sleep, Await and Child return what happened while the run waited, Now the recorded
// store time. Everything the code asks for is named by name and occurrence ("charge#1",
// "charge#2"); a replay that asks for something other than what the history holds at
// that point, or returns before it replayed all the history holds, fails the task with
// a *NonDeterminismError ("history has step charge#1 at seq 7, the code asked for
// refund#1"), which is retried with backoff, so a deploy of the right code resumes the
// run. The code must be deterministic outside steps: no
// clock (use Now), no randomness, no I/O, no goroutines (use Parallel), no map order.
// Patched lets running workflows take a code change at the point they reach it;
// ContinueAsNew starts a fresh history in the same chain.
//
// A task that reaches a sleep, an await or a child that has not ended commits and ends,
// freeing its worker slot. The timer firing (on the store clock, by the workers'
// maintenance duty), the signal, or the child's end appends its event and enqueues the
// run's next task in the same script. Tasks are headgate jobs of kind
// "workflow:<type>" on the run's queue and partition: fairness, rate classes and
// quarantine apply to them as to any job, and a task that keeps killing its worker is
// quarantined like a job (its fingerprint is the workflow's).
//
// A step with StepOptions.Job runs as a job of its own instead, of kind
// "workflow-step:<type>" on its own queue, partition and rate class (see StepJob): the
// task that reaches it enqueues the step job in its commit and ends, and the step job
// replays the history to the step, runs it there and commits its outcome with the
// run's next task. Register the workflow type on the workers of the step's queue too.
//
// # Guarantees
//
//   - Commits are exactly once past the fence. A task's commit, and each checkpoint,
//     is one Lua script that first checks the task's lease (job, lease
//     id, fence) and the history head the task replayed; a worker that lost its lease,
//     or read an older history, writes nothing (*headgate.LeaseRejectedError,
//     *headgate.SequenceConflictError). While a task runs nothing else writes its
//     history: signals, timers and children's ends wait in an inbox that the commit
//     appends.
//   - Steps are at least once. A step's result is committed with the task's next
//     commit: the one that ends the task (at a wait, or the run's end), or a checkpoint
//     after a step once the last commit is CheckpointAfter old or the step asked for it
//     (StepOptions.Checkpoint). A worker that dies before that commit leaves the steps
//     since the last commit to run again on the next task; nothing observes a step's
//     result before it is committed, so the rerun is the only difference. Make steps
//     idempotent (an id derived from
//     the workflow id and step name serves as an idempotency key).
//   - A step job's commit is fenced like a task's: by the job's lease and by the step
//     still waiting for that job in the open run, so a stale or duplicate step job
//     writes nothing (*headgate.LeaseRejectedError, *headgate.StepNotPendingError).
//   - Time is the store's. Timers fire on Redis's clock (or a test's frozen one), so a
//     fleet agrees on when a sleep ends whatever the hosts' clocks say.
//
// Operators cancel (the code sees a cancelled Context at its next step; WithoutCancel
// runs compensation; a run that closes cancelled cancels its children that have not
// ended), pause and resume (a paused run's tasks are staged, not admitted),
// terminate, and retry a failed run from its last good point: through Client, package
// inspector or the store's methods.
//
// # Versions
//
// A run is pinned to the package version it started on (StartOptions.Version, else the
// workflow type's package route, Store.PutPackageRoute; unversioned without either), and
// only the workers that serve that version (ServeVersions) run its tasks. Children
// inherit the version; ContinueAsNew starts the next run on the type's current route,
// which is how a long-lived chain moves to new code. A version whose worker
// deployments are all draining takes no new run (*headgate.VersionDrainingError) while
// the runs on it finish.
//
// # Testing
//
// Package workflowtest runs workflows in a test with the store clock frozen: tasks run
// in the test's goroutine, Advance fires the timers it makes due, and Replay checks a
// recorded history against the current code.
package workflow

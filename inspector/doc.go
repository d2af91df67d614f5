/*
Package inspector is headgate's operator API: what a dashboard, a CLI or an on-call
engineer needs to see and steer one namespace of a headgate store.

	insp, err := inspector.New(rdb, &inspector.Config{Namespace: "billing"})
	stats, err := insp.Stats(ctx)

# Seeing

Stats counts each queue's jobs by state, with its unfinished depth, enqueue limit and
pause flag. ListJobs pages through jobs with filters; Job returns one job with its
error history, result, output and progress. Quarantined lists the
fingerprints blocked after repeated crashes. Why says why a job is not running now,
every reason with its numbers (Reason.Sentence in words), and Workers lists the workers'
heartbeats, live or not; Stats flags a queue with work and no live worker (Unserved).

# Steering

Cancel finishes an unfinished job (a running holder's later ack is rejected). Pause and
Resume stop and restart admission from a queue; enqueues continue. SetEnqueueLimit bounds
a queue's unfinished jobs (producers get *headgate.BackpressureError). SetRateLimit
configures a fleet-wide token bucket for a rate class. ReleaseQuarantine lets a
fingerprint's jobs run again. ReleasePending lets staged jobs run.

Every change is one atomic step on Redis. Reads that span several keys (Stats, Job) are
not snapshots: under load their parts may be a few milliseconds apart.
*/
package inspector

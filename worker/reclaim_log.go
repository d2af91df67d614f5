package worker

import (
	"context"

	"github.com/headgate/headgate"
)

// logReclaimed writes the reclaim duty's line for a job whose lease expired. A
// quarantine needs a person, so its line (ERROR) carries the job's kind, queue,
// partition and attempt, read from the store: one read per quarantined job, which is
// rare. A reclaim that only retries the job is a WARN with what the reclaim returned.
func (w *Worker) logReclaimed(ctx context.Context, r headgate.Reclaimed) {
	if !r.Quarantined {
		w.log.Warn("job lost its lease: retryable", "job_id", r.JobID, "crashes", r.CrashAttempt)
		return
	}
	attrs := []any{"job_id", r.JobID, "fingerprint", r.Fingerprint, "crashes", r.CrashAttempt}
	if j, err := w.store.GetJob(ctx, r.JobID); err == nil {
		attrs = append(attrs, "kind", j.Kind, "queue", j.Queue, "partition", j.PartitionKey, "attempt", j.Attempt+1)
	}
	w.log.Error("job lost its lease at the crash limit: quarantined with its fingerprint, which holds back its siblings until an operator releases it",
		attrs...)
}

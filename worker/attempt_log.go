package worker

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/headgate/headgate"
)

// noHandlerError fails an attempt whose kind has no handler on this worker. It is an
// ordinary failure, retried with backoff: another worker of the fleet (or this one after
// a deploy) may have the handler, so the job must not end here.
type noHandlerError struct {
	kind   string
	worker string
}

func (e *noHandlerError) Error() string {
	return fmt.Sprintf("no handler for kind %q on worker %s", e.kind, e.worker)
}

// logAttempt writes one line for an attempt that ended in an error: ERROR for what needs
// a person (a kind without a handler, a payload that does not decode, a panic), WARN for
// a handler's error. The special errors that only steer the job (Snooze, Skip, Revoke,
// RateLimited) are logged at DEBUG. A failure that repeats is logged at most once per
// Config.LogRepeatInterval (logRepeated).
func (w *Worker) logAttempt(e *execution, err error, o headgate.Outcome, timedOut bool) {
	if err == nil {
		return
	}
	env := &e.claim.Envelope
	attrs := []any{"job_id", env.ID, "kind", env.Kind, "queue", env.Queue, "partition", env.PartitionKey,
		"attempt", env.Attempt + 1, "outcome", o.String()}
	var (
		noHandler   *noHandlerError
		undecodable *errUndecodable
		pe          *panicError
	)
	kind := env.Kind + "\x00"
	switch {
	case errors.As(err, &noHandler):
		w.logRepeated(slog.LevelError, kind+"no handler", "no handler for the job's kind: the attempt fails and the job is retried (register the kind or let a worker that has it run the job)",
			append(attrs, "error", err.Error()))
	case errors.As(err, &undecodable):
		w.logRepeated(slog.LevelError, kind+undecodable.msg, "job payload does not decode: parked as undecodable", append(attrs, "error", undecodable.msg))
	case errors.As(err, &pe):
		value := fmt.Sprint(pe.value)
		w.logRepeated(slog.LevelError, kind+"panic\x00"+value, "job handler panicked", append(attrs, "panic", value, "stack", string(pe.stack)))
	case timedOut:
		w.logRepeated(slog.LevelWarn, kind+"timeout\x00"+err.Error(), "job attempt timed out", append(attrs, "error", err.Error(), "timeout", w.cfg.JobTimeout))
	case o == headgate.OutcomeRetry:
		w.logRepeated(slog.LevelWarn, kind+err.Error(), "job handler failed", append(attrs, "error", err.Error()))
	default:
		w.logRepeated(slog.LevelDebug, kind+err.Error(), "job handler ended the attempt", append(attrs, "reason", err.Error()))
	}
}

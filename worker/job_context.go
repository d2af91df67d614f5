package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/headgate/headgate"
)

// ErrNotInJob is returned by the job helpers (SetResult, WriteOutput, WriteProgress,
// Step) when their context is not a handler's context or one derived from it.
var ErrNotInJob = errors.New("worker: the context is not a job handler's context")

// Limits on a job's attempt logs (see Log).
const (
	maxLogLines     = 100
	maxLogLineBytes = 1024
)

func jobOf(ctx context.Context, helper string) (*execution, error) {
	e := executionFrom(ctx)
	if e == nil {
		return nil, fmt.Errorf("%s: %w", helper, ErrNotInJob)
	}
	return e, nil
}

// SetResult sets the result the job's success is stored with: opaque bytes tagged with a
// schema version (> 0). It replaces an earlier result of the attempt, is sent with the
// success ack (no round trip of its own), and is kept only when the job has a retention.
func SetResult(ctx context.Context, schemaVersion int, b []byte) error {
	e, err := jobOf(ctx, "worker.SetResult")
	if err != nil {
		return err
	}
	if err := checkBlob("result", schemaVersion, b); err != nil {
		return err
	}
	e.mu.Lock()
	e.result = &headgate.Blob{SchemaVersion: schemaVersion, Bytes: slices.Clone(b)}
	e.mu.Unlock()
	return nil
}

// WriteOutput stores the job's output now (one round trip), replacing earlier output;
// inspectors see it while the job runs. It fails with *headgate.LeaseRejectedError when
// the worker no longer holds the job.
func WriteOutput(ctx context.Context, schemaVersion int, b []byte) error {
	e, err := jobOf(ctx, "worker.WriteOutput")
	if err != nil {
		return err
	}
	if err := checkBlob("output", schemaVersion, b); err != nil {
		return err
	}
	_, err = e.w.store.WriteOutput(ctx, e.lease, headgate.Blob{SchemaVersion: schemaVersion, Bytes: b})
	return err
}

// WriteProgress stores the job's progress now (one round trip): current of total units
// (total 0 = unknown) and a short message. It fails with *headgate.LeaseRejectedError
// when the worker no longer holds the job.
func WriteProgress(ctx context.Context, current, total int64, msg string) error {
	e, err := jobOf(ctx, "worker.WriteProgress")
	if err != nil {
		return err
	}
	_, err = e.w.store.WriteProgress(ctx, e.lease, headgate.Progress{Current: current, Total: total, Message: msg})
	return err
}

// Log records a line in the attempt's log, which is stored with the job's history when
// the attempt is acked (no round trip of its own). An attempt keeps its first 100 lines
// of up to 1 KiB each. Outside a handler it does nothing.
func Log(ctx context.Context, line string) {
	e := executionFrom(ctx)
	if e == nil {
		return
	}
	if len(line) > maxLogLineBytes {
		line = line[:maxLogLineBytes] + "…"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.logs) < maxLogLines {
		e.logs = append(e.logs, line)
	} else if len(e.logs) == maxLogLines {
		e.logs = append(e.logs, "… (more lines dropped)")
	}
}

// Step runs fn as the named step of the job, once across attempts. Before fn runs the
// step is recorded as in progress (one round trip), so a crash meanwhile is charged to
// it; after fn succeeds it is recorded as done (another), and later attempts of the job
// skip it: Step returns nil without calling fn. A step whose fn fails stays in progress
// and runs again in the next attempt. Steps run one at a time and do not nest; names
// are unique within a job and may not contain braces or control characters (a name
// that does is an *headgate.InvalidError, and fn does not run).
func Step(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	e, err := jobOf(ctx, "worker.Step")
	if err != nil {
		return err
	}
	if name == "" || len(name) > headgate.MaxNameBytes || strings.ContainsFunc(name, func(r rune) bool {
		return r == '{' || r == '}' || r < 0x20 || r == 0x7f
	}) {
		return fmt.Errorf("worker.Step: %w", &headgate.InvalidError{Field: "name", Reason: fmt.Sprintf(
			"%s must be 1 to %d bytes, without braces or control characters", quote(name), headgate.MaxNameBytes)})
	}
	e.mu.Lock()
	if e.step != "" {
		inner := e.step
		e.mu.Unlock()
		return fmt.Errorf("worker.Step: step %s started while step %s runs: steps do not nest", quote(name), quote(inner))
	}
	if slices.Contains(e.done, name) {
		e.mu.Unlock()
		return nil
	}
	e.step = name
	done := slices.Clone(e.done)
	e.mu.Unlock()

	err = e.w.store.Checkpoint(ctx, e.lease, headgate.Checkpoint{InProgress: name, Done: done})
	if err != nil {
		e.endStep("")
		return fmt.Errorf("worker.Step: record step %s of job %s as started: %w", quote(name), quote(e.lease.JobID), err)
	}
	if err := fn(ctx); err != nil {
		e.endStep("")
		return err
	}
	done = e.endStep(name)
	if err := e.w.store.Checkpoint(ctx, e.lease, headgate.Checkpoint{Done: done}); err != nil {
		return fmt.Errorf("worker.Step: record step %s of job %s as done: %w", quote(name), quote(e.lease.JobID), err)
	}
	return nil
}

// endStep ends the step in progress, adding doneStep to the steps done unless it is
// empty, and returns the steps done.
func (e *execution) endStep(doneStep string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.step = ""
	if doneStep != "" {
		e.done = append(e.done, doneStep)
	}
	return slices.Clone(e.done)
}

func checkBlob(what string, schemaVersion int, b []byte) error {
	switch {
	case schemaVersion <= 0:
		return &headgate.InvalidError{Field: what + ".SchemaVersion", Reason: "must be greater than zero"}
	case schemaVersion > headgate.MaxSchemaVersion:
		return &headgate.InvalidError{Field: what + ".SchemaVersion", Reason: fmt.Sprintf("is %d, more than %d", schemaVersion, headgate.MaxSchemaVersion)}
	case len(b) > headgate.MaxPayloadBytes:
		return &headgate.InvalidError{Field: what + ".Bytes", Reason: fmt.Sprintf("is %d bytes, more than the %d byte limit", len(b), headgate.MaxPayloadBytes)}
	}
	return nil
}

// maxQuotedBytes bounds a name or id quoted in an error message.
const maxQuotedBytes = 200

// quote is %q of s, cut to its first 200 bytes (and marked so) when longer.
func quote(s string) string {
	if len(s) <= maxQuotedBytes {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", s[:maxQuotedBytes], len(s))
}

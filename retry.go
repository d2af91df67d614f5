package headgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RetryOptions tune Retry. The zero value makes the job available now with its attempts
// counted from zero.
type RetryOptions struct {
	// At schedules the job for this time; zero (or a time not after the store's now)
	// makes it available now.
	At time.Time
	// KeepAttempts keeps the failed and crashed attempts the job has used, so it has only
	// what is left of MaxAttempts.
	KeepAttempts bool
	// ReleaseQuarantine lifts the quarantine of the job's fingerprint and releases its
	// held siblings, as Store.ReleaseQuarantine does. Without it, a job whose fingerprint
	// is quarantined is retried into the held set with its siblings.
	ReleaseQuarantine bool
	// Edit changes fields of the job as part of the retry (Store.Edit refuses a finished
	// job).
	Edit *JobEdit
}

// RetryResult is what a retry did.
type RetryResult struct {
	JobID       string
	State       State // StateAvailable or StateScheduled
	ScheduledAt time.Time
	// Lifted is true when the retry lifted the fingerprint's quarantine; Released is how
	// many held siblings it released then.
	Lifted   bool
	Released int
}

// NotRetryableError: the job is not finished (pending, scheduled, available, running or
// retryable), so there is nothing to retry. Nothing was written.
type NotRetryableError struct {
	JobID string
	State State
}

func (e *NotRetryableError) Error() string {
	return fmt.Sprintf("headgate: job %q is %s; only a finished job can be retried", e.JobID, e.State)
}

// JobParkedError: the job's own stored data is corrupt, so the operator verb could not
// act on it; the store parked the job instead (Store.CorruptJobs lists it with Reason),
// and it will not run.
type JobParkedError struct {
	JobID  string
	Reason string
}

func (e *JobParkedError) Error() string {
	return fmt.Sprintf("headgate: job %q has corrupt data and was parked: %s", e.JobID, e.Reason)
}

// parked returns a *JobParkedError when a verb's reply says the job was parked.
func parked(id string, reply []any) error {
	if asString(reply, 0) == "parked" {
		return &JobParkedError{JobID: id, Reason: asString(reply, 1)}
	}
	return nil
}

// Retry makes a finished job (archived, undecodable, cancelled, quarantined, or
// completed and retained) available again, or scheduled at opts.At, on its queue. Its
// attempts start from zero unless opts.KeepAttempts. It is refused, with nothing written,
// with ErrJobNotFound, *NotRetryableError, *DuplicateError when another job now holds the
// strict unique key the job held, *BackpressureError when the queue is at its limit of
// unfinished jobs, or *CorruptError; a job whose own data is corrupt is parked
// (*JobParkedError).
func (s *Store) Retry(ctx context.Context, id string, opts *RetryOptions) (RetryResult, error) {
	if opts == nil {
		opts = &RetryOptions{}
	}
	if err := validateRequired("id", id, true); err != nil {
		return RetryResult{}, err
	}
	ed, err := opts.Edit.args("opts.Edit")
	if err != nil {
		return RetryResult{}, err
	}
	if ed.mask&editScheduledAt != 0 {
		return RetryResult{}, invalid("opts.Edit.ScheduledAt", "a retry is scheduled by opts.At")
	}
	reply, err := s.run(ctx, scriptRetry, id, id, unixMs(opts.At), b01(opts.KeepAttempts), b01(opts.ReleaseQuarantine),
		ed.mask, ed.payload, ed.priority, ed.maxAttempts, ed.partition, ed.tags)
	if err != nil {
		return RetryResult{}, err
	}
	if err := parked(id, reply); err != nil {
		return RetryResult{}, err
	}
	res := RetryResult{JobID: id, State: State(asString(reply, 0)), ScheduledAt: fromMs(asInt(reply, 1)), Lifted: asInt(reply, 2) == 1}
	if res.Lifted {
		// The fingerprint is lifted; its held siblings go back to admission in batches.
		res.Released, err = s.ReleaseQuarantine(ctx, asString(reply, 3))
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// ReleaseQuarantineAndRetry lifts a fingerprint's quarantine, releases its held siblings
// and retries the job that crashed into the limit (the one Quarantined names), with its
// attempts from zero. It returns the retry's result; when the quarantined job is gone
// (deleted) or no longer quarantined, the fingerprint is still released and the result's
// State is empty; for a fingerprint that is not quarantined the result is empty.
func (s *Store) ReleaseQuarantineAndRetry(ctx context.Context, fingerprint string) (RetryResult, error) {
	if err := s.checkFormat(ctx); err != nil {
		return RetryResult{}, err
	}
	if err := validateRequired("fingerprint", fingerprint, true); err != nil {
		return RetryResult{}, err
	}
	id, err := s.rdb.HGet(ctx, s.keys.Quarantine(), fingerprint).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return RetryResult{}, fmt.Errorf("headgate: quarantine of %q: %w", fingerprint, err)
	}
	var res RetryResult
	if id != "" {
		res, err = s.Retry(ctx, id, &RetryOptions{ReleaseQuarantine: true})
		var nr *NotRetryableError
		switch {
		case err == nil && res.Lifted:
			return res, nil
		case err == nil:
			// The job's fingerprint changed under it; lift the one asked for below.
		case errors.Is(err, ErrJobNotFound) || errors.As(err, &nr):
			res = RetryResult{}
		default:
			return RetryResult{}, err
		}
	}
	res.Released, err = s.ReleaseQuarantine(ctx, fingerprint)
	// A fingerprint with no quarantined job was never quarantined: nothing was lifted.
	res.Lifted = err == nil && id != ""
	return res, err
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

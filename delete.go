package headgate

import (
	"context"
	"fmt"
)

// JobRunningError: the job is leased to a worker, so an operator may not edit or delete
// it: cancel it first to delete it; an edit waits until its attempt ends (or cancel it,
// and retry it with the edit). Nothing was written.
type JobRunningError struct {
	JobID string
	edit  bool // from Edit
}

func (e *JobRunningError) Error() string {
	if e.edit {
		return fmt.Sprintf("headgate: job %q is running; edit it once its attempt ends, or cancel it and retry it with the edit", e.JobID)
	}
	return fmt.Sprintf("headgate: job %q is running; cancel it first", e.JobID)
}

// Delete removes a job that is not running, whatever its other state, with its errors,
// result, output and progress and every index entry it has, and releases the strict
// unique key it holds. It returns the state the job had. A throttle window the job opened
// runs out on its own, and a fingerprint it quarantined stays quarantined until
// released. It is refused, with nothing written, with ErrJobNotFound, *JobRunningError
// or *CorruptError; a job whose own data is corrupt is parked (*JobParkedError).
func (s *Store) Delete(ctx context.Context, id string) (State, error) {
	if err := validateRequired("id", id, true); err != nil {
		return "", err
	}
	reply, err := s.run(ctx, scriptDelete, id, id)
	if err != nil {
		return "", err
	}
	if err := parked(id, reply); err != nil {
		return "", err
	}
	return State(asString(reply, 0)), nil
}

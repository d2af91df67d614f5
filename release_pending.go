package headgate

import (
	"context"
	"fmt"
)

// ReleasePending releases staged jobs to scheduled or available and returns the ids
// that were not pending (left unchanged). A job whose stored data is corrupt is reported
// too, and parked (CorruptJobs); a corrupt structure a release would write fails the call
// with a *CorruptError before anything is written.
func (s *Store) ReleasePending(ctx context.Context, ids ...string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > MaxBatch {
		return nil, invalid("ids", "%d ids is more than %d", len(ids), MaxBatch)
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		if err := validateRequired(fmt.Sprintf("ids[%d]", i), id, true); err != nil {
			return nil, err
		}
		args[i] = id
	}
	reply, err := s.run(ctx, scriptReleasePending, "", args...)
	if err != nil {
		return nil, err
	}
	left := make([]string, len(reply))
	for i := range reply {
		left[i] = asString(reply, i)
	}
	return left, nil
}

package headgate

import (
	"context"
	"fmt"
	"strings"
)

// Checkpoint records the holder's step in progress and steps done. It fails with a
// *CorruptError, writing nothing, when the job's stored data is corrupt.
func (s *Store) Checkpoint(ctx context.Context, lease LeaseRef, cp Checkpoint) error {
	if err := validateLease(lease); err != nil {
		return err
	}
	if err := validateName("InProgress", cp.InProgress, true); err != nil {
		return err
	}
	for i, d := range cp.Done {
		if err := validateRequired(fmt.Sprintf("Done[%d]", i), d, true); err != nil {
			return err
		}
	}
	_, err := s.run(ctx, scriptCheckpoint, lease.JobID, lease.JobID, lease.LeaseID, lease.Fence,
		cp.InProgress, strings.Join(cp.Done, "\n"))
	return err
}

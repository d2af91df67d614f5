package headgate

import (
	"context"
	"time"
)

// Renew extends the leases the caller still holds to now+lease and returns the ids of
// the jobs whose lease it lost. A job whose stored data is corrupt is reported lost and
// parked (CorruptJobs); a leases key of another type fails the call with a *CorruptError
// before anything is written.
func (s *Store) Renew(ctx context.Context, leases []LeaseRef, lease time.Duration) ([]string, error) {
	if lease < time.Millisecond {
		return nil, invalid("lease", "must be at least 1ms, not %s", lease)
	}
	if len(leases) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2+3*len(leases))
	args = append(args, ms(lease), len(leases))
	for _, l := range leases {
		if err := validateLease(l); err != nil {
			return nil, err
		}
		args = append(args, l.JobID, l.LeaseID, l.Fence)
	}
	reply, err := s.run(ctx, scriptRenew, "", args...)
	if err != nil {
		return nil, err
	}
	lost := make([]string, len(reply))
	for i := range reply {
		lost[i] = asString(reply, i)
	}
	return lost, nil
}

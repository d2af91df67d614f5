package headgate

import (
	"context"
	"time"
)

// DutyLease is the answer to a duty claim: whether the holder has the duty, and the
// fence of its tenure, which goes up each time the duty changes hands (or its holder's
// lease ran out), so writes made on behalf of the duty can refuse a past tenure.
type DutyLease struct {
	Held  bool
	Fence int64
}

// ClaimDuty takes or renews the named maintenance duty for holder; false when another
// holder has it. A duty key whose data is corrupt holds nobody and is replaced.
func (s *Store) ClaimDuty(ctx context.Context, name, holder string, lease time.Duration) (bool, error) {
	l, err := s.ClaimDutyLease(ctx, name, holder, lease)
	return l.Held, err
}

// ClaimDutyLease is ClaimDuty that also returns the fence of the holder's tenure.
func (s *Store) ClaimDutyLease(ctx context.Context, name, holder string, lease time.Duration) (DutyLease, error) {
	if err := validateRequired("name", name, true); err != nil {
		return DutyLease{}, err
	}
	if err := validateRequired("holder", holder, true); err != nil {
		return DutyLease{}, err
	}
	if lease < time.Millisecond {
		return DutyLease{}, invalid("lease", "must be at least 1ms, not %s", lease)
	}
	reply, err := s.run(ctx, scriptClaimDuty, "", name, holder, ms(lease))
	if err != nil {
		return DutyLease{}, err
	}
	return DutyLease{Held: asInt(reply, 0) == 1, Fence: asInt(reply, 1)}, nil
}

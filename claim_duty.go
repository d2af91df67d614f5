package headgate

import (
	"context"
	"time"
)

// ClaimDuty takes or renews the named maintenance duty for holder; false when another
// holder has it. A duty key whose data is corrupt holds nobody and is replaced.
func (s *Store) ClaimDuty(ctx context.Context, name, holder string, lease time.Duration) (bool, error) {
	if err := validateRequired("name", name, true); err != nil {
		return false, err
	}
	if err := validateRequired("holder", holder, true); err != nil {
		return false, err
	}
	if lease < time.Millisecond {
		return false, invalid("lease", "must be at least 1ms, not %s", lease)
	}
	reply, err := s.run(ctx, scriptClaimDuty, "", name, holder, ms(lease))
	if err != nil {
		return false, err
	}
	return asInt(reply, 0) == 1, nil
}

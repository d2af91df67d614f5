package headgate

import (
	"context"
)

// Reclaimed is a job whose lease expired.
type Reclaimed struct {
	JobID        string
	Fingerprint  string
	CrashAttempt int
	Quarantined  bool
}

// ReclaimExpired applies LeaseLost to up to limit jobs whose lease expired: each is
// retryable after backoff, or quarantined at the crash limit.
func (s *Store) ReclaimExpired(ctx context.Context, limit int) ([]Reclaimed, error) {
	if limit <= 0 {
		return nil, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptReclaim, "", limit, s.cfg.CrashLimit, ms(s.cfg.CrashRetryBase), ms(s.cfg.RetryCap))
	if err != nil {
		return nil, err
	}
	out := make([]Reclaimed, len(reply))
	for i, v := range reply {
		r, _ := v.([]any)
		out[i] = Reclaimed{JobID: asString(r, 0), Fingerprint: asString(r, 1),
			CrashAttempt: int(asInt(r, 2)), Quarantined: asInt(r, 3) == 1}
	}
	return out, nil
}

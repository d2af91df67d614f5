package headgate

import (
	"context"
	"time"
)

// PromoteDue makes up to limit due scheduled and retryable jobs available. It returns
// how many it promoted and when the next scheduled job is due (zero when none is).
// A due job whose stored data is corrupt is parked (CorruptJobs) instead and counts as
// taken; a corrupt structure the call would write (the scheduled set, a queue's counts or
// indexes) fails it with a *CorruptError before anything is written.
func (s *Store) PromoteDue(ctx context.Context, limit int) (int, time.Time, error) {
	if limit <= 0 {
		return 0, time.Time{}, invalid("limit", "must be positive")
	}
	reply, err := s.run(ctx, scriptPromote, "", limit)
	if err != nil {
		return 0, time.Time{}, err
	}
	next := time.Time{}
	if n := asInt(reply, 1); n >= 0 {
		next = time.UnixMilli(n)
	}
	return int(asInt(reply, 0)), next, nil
}

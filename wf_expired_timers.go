package headgate

import (
	"context"
	"time"
)

// ExpiredTimers returns up to limit armed timers with FireAt <= asOf (the store clock's
// now when asOf is zero), ordered by FireAt, then workflow id, then timer id. Timers stay
// armed until retired. limit defaults to 100 (0) and is at most 1,000.
func (s *Store) ExpiredTimers(ctx context.Context, asOf time.Time, limit int) ([]TimerEntry, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	at := int64(-1)
	if !asOf.IsZero() {
		at = asOf.UnixMilli()
	}
	reply, err := s.run(ctx, scriptWfExpiredTimers, "", at, limit)
	if err != nil {
		return nil, err
	}
	out := make([]TimerEntry, 0, len(reply)/4)
	for i := 0; i+3 < len(reply); i += 4 {
		out = append(out, TimerEntry{WorkflowID: asString(reply, i), TimerID: asString(reply, i+1),
			FireAt: time.UnixMilli(asInt(reply, i+2)), ArmedSeq: asInt(reply, i+3)})
	}
	return out, nil
}

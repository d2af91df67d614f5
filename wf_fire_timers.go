package headgate

import (
	"context"
	"time"
)

// FireTimers fires up to limit durable timers due on the store clock, in fire order:
// each is retired and its workflow's open run gets a timer_fired event and a task. It
// returns how many it fired and the fire time of the next armed timer (zero when none).
// The maintenance duty of the workers calls it; limit is 1..1,000.
func (s *Store) FireTimers(ctx context.Context, limit int) (int, time.Time, error) {
	if limit < 1 || limit > maxPage {
		return 0, time.Time{}, invalid("limit", "is %d, outside 1..%d", limit, maxPage)
	}
	reply, err := s.run(ctx, scriptWfFireTimers, "", limit)
	if err != nil {
		return 0, time.Time{}, err
	}
	var next time.Time
	if ms := asInt(reply, 1); ms >= 0 {
		next = time.UnixMilli(ms)
	}
	return int(asInt(reply, 0)), next, nil
}

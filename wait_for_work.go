package headgate

import (
	"context"
	"errors"
	"time"

	"github.com/headgate/headgate/internal/reroute"
	"github.com/redis/go-redis/v9"
)

// WaitForWork blocks until one of the queues gets a wake-up (new available work) or
// timeout passes, and reports whether it was woken. Wake-ups are hints: a caller still
// admits to find out, and polls at least every timeout in case one was missed.
func (s *Store) WaitForWork(ctx context.Context, queues []string, timeout time.Duration) (bool, error) {
	ks := make([]string, len(queues))
	for i, q := range queues {
		ks[i] = s.keys.Wake(q)
	}
	_, err := s.rdb.BLPop(ctx, timeout, ks...).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		reroute.AfterFailure(s.rdb, err)
	}
	return err == nil, err
}

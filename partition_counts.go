package headgate

import (
	"context"
	"strconv"
)

// PartitionCounts returns how many of the queue's jobs of a named partition are in each
// state (StateHeld for the available ones held back by a quarantined fingerprint, not
// counted as StateAvailable): one read of the counts the transitions keep, whatever the
// partition's size. States with no job are left out.
func (s *Store) PartitionCounts(ctx context.Context, queue, partition string) (map[State]int64, error) {
	if err := validateRequired("queue", queue, false); err != nil {
		return nil, err
	}
	if err := validateRequired("partition", partition, true); err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.PartitionCounts(queue, partition)).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[State]int64, len(h))
	for f, v := range h {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n != 0 {
			out[State(f)] = n
		}
	}
	return out, nil
}

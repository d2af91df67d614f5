package headgate

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// PartitionCounts returns how many of the queue's jobs of a partition are in each state
// (StateHeld for the available ones held back by a quarantined fingerprint, not counted
// as StateAvailable): one read of the counts the transitions keep, whatever the
// partition's size. Partition "" is the jobs of no partition. States with no job are
// left out.
func (s *Store) PartitionCounts(ctx context.Context, queue, partition string) (map[State]int64, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return nil, err
	}
	if partition != "" {
		if err := validateName("partition", partition, true); err != nil {
			return nil, err
		}
	}
	var r partitionCountsRead
	if _, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		r = s.readPartitionCounts(ctx, pipe, queue, partition)
		return nil
	}); err != nil {
		return nil, err
	}
	return r.counts(), nil
}

// partitionCountsRead is the pipelined read of one partition's counts: the partition's
// own, or for the jobs of no partition ("") the queue's and the sums of its named
// partitions', of which it is the difference.
type partitionCountsRead struct {
	own, queue, named *redis.MapStringStringCmd
}

// readPartitionCounts queues the read of a partition's counts on pipe; for the jobs of
// no partition, pipe must be a transaction, so that both hashes are of one moment.
func (s *Store) readPartitionCounts(ctx context.Context, pipe redis.Pipeliner, queue, partition string) partitionCountsRead {
	if partition != "" {
		return partitionCountsRead{own: pipe.HGetAll(ctx, s.keys.PartitionCounts(queue, partition))}
	}
	return partitionCountsRead{queue: pipe.HGetAll(ctx, s.keys.Counts(queue)), named: pipe.HGetAll(ctx, s.keys.PartitionCountsNamed(queue))}
}

// counts returns the read's non-zero counts by state.
func (r partitionCountsRead) counts() map[State]int64 {
	out := map[State]int64{}
	if r.own != nil {
		for f, v := range r.own.Val() {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n != 0 {
				out[State(f)] = n
			}
		}
		return out
	}
	q, named := r.queue.Val(), r.named.Val()
	for _, st := range append(States[:len(States):len(States)], StateHeld) {
		total, _ := strconv.ParseInt(q[string(st)], 10, 64)
		inNamed, _ := strconv.ParseInt(named[string(st)], 10, 64)
		if n := total - inNamed; n != 0 {
			out[st] = n
		}
	}
	return out
}

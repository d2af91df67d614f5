package headgate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// PartitionStat is one partition of a queue's admission ring as the tenants page shows
// it: its counts and how long its waiting jobs have waited.
type PartitionStat struct {
	// Partition is the partition's name, "" for the jobs of no partition.
	Partition string
	// Counts are the partition's jobs by state (PartitionCounts).
	Counts map[State]int64
	// Waiting counts its unpinned available jobs, the ones admission takes from its turn.
	Waiting int64
	// WaitP50 and WaitP99 are how long the jobs at the median and the 99th percentile of
	// the partition's admission order have been due; Oldest the job admitted next. With
	// one priority in the partition that order is by due time, so these are the quantiles
	// of the waits of its waiting jobs now.
	WaitP50, WaitP99, Oldest time.Duration
	// Admitted counts the partition's jobs admitted in the last hour of store time (the
	// current minute and the 59 before it), and AdmittedShare is their share of all the
	// queue's admissions then (0 when the queue admitted none): what fair admission gave
	// the partition, beside what it waits for.
	Admitted      int64
	AdmittedShare float64
	// QueueAdmitted is the queue's admissions in the same hour, of every partition.
	QueueAdmitted int64
}

// admittedMinutes is the minutes of admissions PartitionStats sums: an hour.
const admittedMinutes = 60

// PartitionStatsMax bounds the partitions one PartitionStats call reads.
const PartitionStatsMax = 200

// PartitionStats reads the queue's partitions with unpinned available work, in turn
// order from offset (at most limit, 1..PartitionStatsMax), and how many the ring holds:
// three round trips of plain reads (the ring; each partition's counts and size, and the
// hour's admissions by minute; its waiting jobs at three ranks), whatever the partitions'
// sizes.
func (s *Store) PartitionStats(ctx context.Context, queue string, offset, limit int) ([]PartitionStat, int64, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, 0, err
	}
	if err := validateRequired("queue", queue, false); err != nil {
		return nil, 0, err
	}
	if offset < 0 {
		return nil, 0, invalid("offset", "is %d, less than zero", offset)
	}
	if limit < 1 || limit > PartitionStatsMax {
		return nil, 0, invalid("limit", "is %d, outside 1..%d", limit, PartitionStatsMax)
	}
	pipe := s.rdb.Pipeline()
	clock := pipe.Get(ctx, s.keys.Clock())
	redisTime := pipe.Time(ctx)
	size := pipe.ZCard(ctx, s.keys.Ring(queue))
	names := pipe.ZRange(ctx, s.keys.Ring(queue), int64(offset), int64(offset+limit-1))
	_, _ = pipe.Exec(ctx) // each command's error is checked below: a nil clock is no error
	now, err := pipedNow(clock, redisTime)
	if err != nil {
		return nil, 0, err
	}
	if err := errors.Join(size.Err(), names.Err()); err != nil {
		return nil, 0, err
	}
	type reads struct {
		counts         partitionCountsRead
		waiting        *redis.IntCmd
		head, p50, p99 *redis.StringSliceCmd
	}
	parts := names.Val()
	rs := make([]reads, len(parts))
	// A transaction: the counts of the jobs of no partition are a difference of two reads.
	pipe = s.rdb.TxPipeline()
	for i, p := range parts {
		rs[i].counts = s.readPartitionCounts(ctx, pipe, queue, p)
		rs[i].waiting = pipe.ZCard(ctx, s.keys.Partition(queue, p))
	}
	var admitted []*redis.SliceCmd
	if len(parts) > 0 {
		fields := append(append([]string(nil), parts...), admittedAll)
		minute := now.UnixMilli() / 60000
		for m := minute - admittedMinutes + 1; m <= minute; m++ {
			admitted = append(admitted, pipe.HMGet(ctx, s.keys.AdmittedIn(queue, m), fields...))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, err
		}
	}
	// Sums of the hour's minutes: one per partition, then the queue's all.
	sums := make([]int64, len(parts)+1)
	for _, cmd := range admitted {
		for j, v := range cmd.Val() {
			if str, ok := v.(string); ok {
				if n, err := strconv.ParseInt(str, 10, 64); err == nil {
					sums[j] += n
				}
			}
		}
	}
	// The quantiles' ranks depend on the sizes: a third read.
	pipe = s.rdb.Pipeline()
	for i, p := range parts {
		n := rs[i].waiting.Val()
		if n == 0 {
			continue
		}
		k := s.keys.Partition(queue, p)
		rs[i].head = pipe.ZRange(ctx, k, 0, 0)
		// Admission order is oldest due first: the 99th percentile of waits is 1% in.
		rs[i].p99 = pipe.ZRange(ctx, k, (n-1)/100, (n-1)/100)
		rs[i].p50 = pipe.ZRange(ctx, k, (n-1)/2, (n-1)/2)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	out := make([]PartitionStat, len(parts))
	for i, p := range parts {
		st := PartitionStat{Partition: p, Counts: rs[i].counts.counts(), Waiting: rs[i].waiting.Val(), Admitted: sums[i]}
		if st.QueueAdmitted = sums[len(parts)]; st.QueueAdmitted > 0 {
			st.AdmittedShare = float64(st.Admitted) / float64(st.QueueAdmitted)
		}
		if st.Waiting > 0 {
			st.Oldest = memberWait(rs[i].head, now)
			st.WaitP99 = memberWait(rs[i].p99, now)
			st.WaitP50 = memberWait(rs[i].p50, now)
		}
		out[i] = st
	}
	return out, size.Val(), nil
}

// memberWait is how long the job of a partition member (rank in lua/lib.lua) has been
// due at now; 0 when the member does not parse or is not due.
func memberWait(cmd *redis.StringSliceCmd, now time.Time) time.Duration {
	m := cmd.Val()
	if len(m) == 0 {
		return 0
	}
	due, ok := rankDue(m[0])
	if !ok {
		return 0
	}
	return max(now.Sub(time.UnixMilli(due)), 0)
}

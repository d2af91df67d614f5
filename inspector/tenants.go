package inspector

import (
	"context"
	"time"

	"github.com/headgate/headgate"
)

// PartitionStat is one partition of a queue's admission ring: its counts and how long
// its waiting jobs have waited.
type PartitionStat = headgate.PartitionStat

// PartitionStats returns the queue's partitions with unpinned available work in turn
// order (the next admitted first) from offset, at most limit (1..
// headgate.PartitionStatsMax), and how many the ring holds: three round trips of plain
// reads, whatever the partitions' sizes.
func (i *Inspector) PartitionStats(ctx context.Context, queue string, offset, limit int) ([]PartitionStat, int64, error) {
	return i.store.PartitionStats(ctx, queue, offset, limit)
}

// Series returns the throughput series of each queue asked for from since, oldest
// sample first, in one round trip (headgate.Store.Series).
func (i *Inspector) Series(ctx context.Context, since time.Time, queues ...string) (map[string][]headgate.SeriesSample, error) {
	return i.store.Series(ctx, since, queues...)
}

// Outcomes are what a queue's acks did over a span: the jobs completed and the attempts
// that failed (retried, archived or undecodable).
type Outcomes struct {
	Completed, Failed int64
	// Sampled is whether the queue's throughput series had a sample in the span: without
	// one (no worker runs the series duty) the zeros say nothing.
	Sampled bool
}

// Throughput returns each queue's outcomes over the window before now, from its
// throughput series (a sample a minute, headgate.Store.RecordSeries): the growth of its
// outcome counters between consecutive samples taken in the window, the first of them
// measured from the sample before it, the last the live counters (SeriesSample.Live),
// which count however far past now the store's clock is when it reads them: now is
// read first, so on a running clock the live counters are always a little later. One
// round trip for all the queues.
func (i *Inspector) Throughput(ctx context.Context, now time.Time, window time.Duration, queues ...string) (map[string]Outcomes, error) {
	if window <= 0 {
		return nil, &headgate.InvalidError{Field: "window", Reason: "is " + window.String() + ", not positive"}
	}
	// Two gaps more than the window: the sample just before it is the base of its first
	// change, even when the duty ran late.
	series, err := i.store.Series(ctx, now.Add(-window-2*headgate.SeriesGapDefault), queues...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Outcomes, len(queues))
	for _, q := range queues {
		samples := series[q]
		var o Outcomes
		for k, sm := range samples {
			if age := now.Sub(sm.At); (age < 0 && !sm.Live) || age >= window {
				continue
			}
			o.Sampled = true
			if k > 0 {
				done, failed := sm.Since(samples[k-1])
				o.Completed += done
				o.Failed += failed
			}
		}
		out[q] = o
	}
	return out, nil
}

package headgate

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestEditPastTimeMeansNow: an edit's ScheduledAt in the past means now, as an
// enqueue's does: the job is due from the edit on, not waiting since the past time, so
// the waits the partition stats (and the dashboard, and the oldest-wait metric) report
// are the job's own. Available, scheduled and pending jobs alike.
func TestEditPastTimeMeansNow(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		_, err := s.Enqueue(ctx, Envelope{ID: "avail", Kind: "k", Queue: "q", PartitionKey: "p"},
			Envelope{ID: "sched", Kind: "k", Queue: "q", PartitionKey: "p", ScheduledIn: 2 * time.Hour},
			Envelope{ID: "pend", Kind: "k", Queue: "q", PartitionKey: "p", Pending: true})
		must(err)
		must(s.AdvanceClock(ctx, time.Minute))
		now := frozenEpoch.Add(time.Minute)
		past := frozenEpoch.Add(-365 * 24 * time.Hour)
		for id, want := range map[string]State{"avail": StateAvailable, "sched": StateAvailable, "pend": StatePending} {
			r, err := s.Edit(ctx, id, JobEdit{ScheduledAt: &past})
			must(err)
			if r.State != want || !r.ScheduledAt.Equal(now) {
				t.Errorf("Edit %s to a past time: %s at %s, want %s at the store's now %s", id, r.State, r.ScheduledAt, want, now)
			}
			j, err := s.GetJob(ctx, id)
			must(err)
			if !j.Envelope.ScheduledAt.Equal(now) {
				t.Errorf("job %s is scheduled at %s, want %s", id, j.Envelope.ScheduledAt, now)
			}
		}
		stats, _, err := s.PartitionStats(ctx, "q", 0, 10)
		must(err)
		if len(stats) != 1 || stats[0].Oldest != 0 || stats[0].WaitP99 != 0 {
			t.Errorf("partition stats %+v, want one partition whose jobs have waited 0", stats)
		}
	})
}

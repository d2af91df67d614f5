package headgate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestPartitionStats reads each partition of the ring with its counts and the waits of
// its waiting jobs at known due times, page by page.
func TestPartitionStats(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, err := NewStore(rdb, &StoreConfig{Namespace: redistest.Namespace(t)})
		if err != nil {
			t.Fatal(err)
		}
		epoch := time.UnixMilli(1_750_000_000_000)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.FreezeClock(ctx, epoch))
		_, err = s.Enqueue(ctx, Envelope{ID: "z1", Kind: "k", Queue: "q", PartitionKey: "zeta"},
			Envelope{ID: "z2", Kind: "k", Queue: "q", PartitionKey: "zeta"})
		must(err)
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{"q"}, Capacity: 1, Lease: time.Hour})
		must(err)
		if len(claims) != 1 {
			t.Fatalf("admitted %d", len(claims))
		}
		// acme's job i is due at epoch + i s.
		for i := range 201 {
			_, err = s.Enqueue(ctx, Envelope{ID: fmt.Sprintf("a%03d", i), Kind: "k", Queue: "q", PartitionKey: "acme"})
			must(err)
			must(s.AdvanceClock(ctx, time.Second))
		}
		must(s.AdvanceClock(ctx, 99*time.Second)) // now: epoch + 300 s
		stats, total, err := s.PartitionStats(ctx, "q", 0, 10)
		must(err)
		if total != 2 || len(stats) != 2 {
			t.Fatalf("PartitionStats = %+v, %d partitions; want zeta and acme", stats, total)
		}
		byName := map[string]PartitionStat{stats[0].Partition: stats[0], stats[1].Partition: stats[1]}
		a, z := byName["acme"], byName["zeta"]
		if a.Waiting != 201 || a.Counts[StateAvailable] != 201 || a.Oldest != 300*time.Second ||
			a.WaitP99 != 298*time.Second || a.WaitP50 != 200*time.Second {
			t.Errorf("acme = %+v; want 201 waiting, oldest 300s, p99 298s, p50 200s", a)
		}
		if z.Waiting != 1 || z.Counts[StateAvailable] != 1 || z.Counts[StateRunning] != 1 || z.Oldest != 300*time.Second || z.WaitP50 != 300*time.Second {
			t.Errorf("zeta = %+v; want 1 waiting, 1 running, waiting 300s", z)
		}
		page, total, err := s.PartitionStats(ctx, "q", 1, 10)
		must(err)
		if total != 2 || len(page) != 1 || page[0].Partition != stats[1].Partition {
			t.Errorf("from offset 1: %+v, %d", page, total)
		}
		if _, _, err := s.PartitionStats(ctx, "q", 0, PartitionStatsMax+1); err == nil {
			t.Errorf("a limit over PartitionStatsMax: no error")
		}
	})
}

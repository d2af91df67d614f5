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
		s, must := frozenStore(t, rdb)
		_, err := s.Enqueue(ctx, Envelope{ID: "z1", Kind: "k", Queue: "q", PartitionKey: "zeta"},
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

// TestPartitionStatsAdmissions sums each partition's admissions over the last hour of
// store time, and its share of the queue's.
func TestPartitionStatsAdmissions(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		for i := range 4 {
			_, err := s.Enqueue(ctx, Envelope{ID: fmt.Sprintf("z%d", i), Kind: "k", Queue: "q", PartitionKey: "zeta"},
				Envelope{ID: fmt.Sprintf("a%d", i), Kind: "k", Queue: "q", PartitionKey: "acme"})
			must(err)
		}
		admit := func(lease string, capacity int) map[string]int64 {
			t.Helper()
			claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: lease, Queues: []string{"q"}, Capacity: capacity, Lease: 24 * time.Hour})
			must(err)
			if len(claims) != capacity {
				t.Fatalf("admitted %d of %d", len(claims), capacity)
			}
			by := map[string]int64{}
			for _, c := range claims {
				by[c.Envelope.PartitionKey]++
			}
			return by
		}
		check := func(what string, want map[string]int64) {
			t.Helper()
			stats, _, err := s.PartitionStats(ctx, "q", 0, 10)
			must(err)
			if len(stats) != 2 {
				t.Fatalf("%s: %d partitions listed, want acme and zeta waiting", what, len(stats))
			}
			all := want["acme"] + want["zeta"]
			for _, st := range stats {
				share := float64(want[st.Partition]) / float64(all)
				if st.Admitted != want[st.Partition] || st.AdmittedShare != share || st.QueueAdmitted != all {
					t.Errorf("%s: %s admitted %d (share %.3f), want %d (%.3f)", what, st.Partition, st.Admitted, st.AdmittedShare,
						want[st.Partition], share)
				}
			}
		}
		first := admit("l1", 3)
		must(s.AdvanceClock(ctx, 30*time.Minute))
		second := admit("l2", 2)
		both := map[string]int64{"acme": first["acme"] + second["acme"], "zeta": first["zeta"] + second["zeta"]}
		if both["acme"] == 0 || both["zeta"] == 0 {
			t.Fatalf("admissions by partition %v: want both partitions served", both)
		}
		check("after both admissions", both)
		// 75 minutes in, the first admission's minute is out of the hour.
		must(s.AdvanceClock(ctx, 45*time.Minute))
		check("an hour after the first", second)
	})
}

package headgate_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/redis/go-redis/v9"
)

// TestClusterNamespacesSpreadOverMasters: on a cluster, each namespace's keys live in one
// slot on one master, and the namespaces the conformance suite creates land on several
// masters, so the suite's cluster run does exercise more than one shard.
func TestClusterNamespacesSpreadOverMasters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// With 3 masters, 12 namespaces all on one master would be a 1 in 177,147 chance.
	const namespaces = 12
	owner := map[string]string{} // namespace → master address holding its keys
	for i := range namespaces {
		s := rqueuetest.NewClusterStore(t)
		cc, ok := s.Client().(*redis.ClusterClient)
		if !ok {
			t.Fatalf("NewClusterStore's client is %T, want *redis.ClusterClient", s.Client())
		}
		// A few kinds of keys: job hashes, queue structures, a rate bucket.
		jobs := []headgate.Envelope{
			{ID: fmt.Sprintf("a-%d", i), Kind: "k", PartitionKey: "p1"},
			{ID: fmt.Sprintf("b-%d", i), Kind: "k", Queue: "other", PartitionKey: "p2", RateClass: "r"},
		}
		if _, err := s.Enqueue(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRateLimit(ctx, "r", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 10}); err != nil {
			t.Fatal(err)
		}

		pattern := headgate.KeyPattern(s.Namespace())
		holders := map[string][]string{} // master → keys of the namespace it holds
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			keys, err := m.Keys(ctx, pattern).Result() // a test namespace: a handful of keys
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				holders[m.Options().Addr] = keys
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(holders) != 1 {
			t.Fatalf("namespace %s has keys on %d masters (%v), want exactly one", s.Namespace(), len(holders), slices.Collect(maps.Keys(holders)))
		}
		for addr, keys := range holders {
			slots := map[int64]bool{}
			for _, k := range keys {
				slot, err := cc.ClusterKeySlot(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				slots[slot] = true
			}
			if len(slots) != 1 || len(keys) < 5 {
				t.Errorf("namespace %s: %d keys in slots %v, want several keys in one slot", s.Namespace(), len(keys), slots)
			}
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			if m.Options().Addr != addr {
				t.Errorf("namespace %s: keys on %s, but its slot's master is %s", s.Namespace(), addr, m.Options().Addr)
			}
			owner[s.Namespace()] = addr
		}
	}
	masters := map[string]int{}
	for _, addr := range owner {
		masters[addr]++
	}
	t.Logf("%d namespaces over masters %v", namespaces, masters)
	if len(masters) < 2 {
		t.Errorf("%d namespaces all landed on one master %v: the cluster run exercises one shard", namespaces, masters)
	}
}

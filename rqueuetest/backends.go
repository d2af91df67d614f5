package rqueuetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// FreshNamespace returns a namespace no other test, test binary or earlier run on a
// shared server uses: the test's name and a random suffix.
func FreshNamespace(t testing.TB) string { return redistest.Namespace(t) }

// NewStore returns a Store in a fresh namespace on rdb. The namespace's keys are deleted
// at cleanup.
func NewStore(t testing.TB, rdb redis.UniversalClient) *headgate.Store {
	t.Helper()
	return NewStoreWith(t, rdb, headgate.StoreConfig{})
}

// NewStoreWith is NewStore with cfg, its Namespace replaced by a fresh one.
func NewStoreWith(t testing.TB, rdb redis.UniversalClient, cfg headgate.StoreConfig) *headgate.Store {
	t.Helper()
	cfg.Namespace = FreshNamespace(t)
	s, err := headgate.NewStore(rdb, &cfg)
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	t.Cleanup(func() { deleteNamespace(t, s) })
	return s
}

// NewMiniredisStore returns a Store in a fresh namespace on an embedded miniredis
// shared by the test binary. No Redis server is needed.
func NewMiniredisStore(t testing.TB) *headgate.Store {
	t.Helper()
	return NewStore(t, redistest.Miniredis(t))
}

// NewRedisStore returns a Store in a fresh namespace on a real redis-server:
// HEADGATE_TEST_REDIS when set, else one started from PATH for the test binary. Without
// a server the test is skipped loudly (failed when HEADGATE_REQUIRE_REDIS=1). The
// namespace's keys are deleted at cleanup.
func NewRedisStore(t testing.TB) *headgate.Store {
	t.Helper()
	return NewStore(t, redistest.Shared(t))
}

// NewClusterStore is NewRedisStore on a local Redis Cluster (HEADGATE_TEST_CLUSTER when set).
func NewClusterStore(t testing.TB) *headgate.Store {
	t.Helper()
	return NewStore(t, redistest.SharedCluster(t))
}

// scanNamespace lists every key of the store's namespace, from every master of a cluster.
func scanNamespace(ctx context.Context, s *headgate.Store) ([]string, error) {
	pattern := headgate.KeyPattern(s.Namespace())
	var names []string
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			names = append(names, iter.Val())
		}
		return iter.Err()
	}
	if cc, ok := s.Client().(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster calls in parallel
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, c)
		})
		return names, err
	}
	return names, scan(ctx, s.Client())
}

// deleteNamespace removes every key of the store's namespace (one slot: DEL takes them
// in batches). A failure is logged, not failed: tests that stop a server on purpose
// cannot clean up after themselves.
func deleteNamespace(t testing.TB, s *headgate.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, err := scanNamespace(ctx, s)
	for len(names) > 0 && err == nil {
		batch := names[:min(len(names), 500)]
		names = names[len(batch):]
		err = s.Client().Del(ctx, batch...).Err()
	}
	if err != nil {
		t.Logf("rqueuetest: delete namespace %s: %v", s.Namespace(), err)
	}
}

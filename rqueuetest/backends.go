package rqueuetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

var (
	miniOnce sync.Once
	mini     *miniredis.Miniredis
	miniErr  error
	nsSeq    atomic.Int64
)

// sharedMiniredis is one embedded server per test binary; tests isolate by namespace.
func sharedMiniredis(t testing.TB) *miniredis.Miniredis {
	t.Helper()
	miniOnce.Do(func() {
		mini = miniredis.NewMiniRedis()
		miniErr = mini.Start()
	})
	if miniErr != nil {
		t.Fatalf("start embedded miniredis: %v", miniErr)
	}
	return mini
}

// FreshNamespace returns a namespace no other test of any process uses.
func FreshNamespace() string {
	return fmt.Sprintf("test-%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, nsSeq.Add(1))
}

// NewMiniredisStore returns a Store in a fresh namespace on an embedded miniredis
// shared by the test binary. No Redis server is needed.
func NewMiniredisStore(t testing.TB) *headgate.Store {
	t.Helper()
	m := sharedMiniredis(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return storeOn(t, rdb)
}

// NewRedisStore returns a Store in a fresh namespace on a real redis-server:
// HEADGATE_TEST_REDIS when set, else one started from PATH for the test binary. Without
// a server the test is skipped loudly (failed when HEADGATE_REQUIRE_REDIS=1). The
// namespace's keys are deleted at cleanup.
func NewRedisStore(t testing.TB) *headgate.Store {
	t.Helper()
	return storeOn(t, redistest.Shared(t))
}

// NewClusterStore is NewRedisStore on a local Redis Cluster (HEADGATE_TEST_CLUSTER when set).
func NewClusterStore(t testing.TB) *headgate.Store {
	t.Helper()
	return storeOn(t, redistest.SharedCluster(t))
}

func storeOn(t testing.TB, rdb redis.UniversalClient) *headgate.Store {
	t.Helper()
	s, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: FreshNamespace()})
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	t.Cleanup(func() { deleteNamespace(s) })
	return s
}

// deleteNamespace removes every key of the store's namespace.
func deleteNamespace(s *headgate.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pattern := "hg:{" + s.Namespace() + "}:*"
	del := func(ctx context.Context, c redis.UniversalClient) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 500 {
				c.Del(ctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			c.Del(ctx, batch...)
		}
		return iter.Err()
	}
	if cc, ok := s.Client().(*redis.ClusterClient); ok {
		cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return del(ctx, c) })
		return
	}
	del(ctx, s.Client())
}

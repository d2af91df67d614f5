package rqueue_test

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueue"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// forEachBackend runs fn as a parallel subtest on miniredis, on a real redis-server and
// on a local Redis Cluster, named by the backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		fn(t, rdb)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		fn(t, redistest.Shared(t))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		fn(t, redistest.SharedCluster(t))
	})
}

// testNamespace is a namespace no other test (or earlier run on a shared server) uses.
func testNamespace(t testing.TB) string {
	return "rqueue-test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + rqueue.NewID()
}

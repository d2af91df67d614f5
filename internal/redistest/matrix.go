package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Backend is one kind of Redis the tests run on.
type Backend struct {
	// Name is the name of the subtest that runs on it: "miniredis", "redis" or "Cluster".
	Name string
	// Client returns a client on the backend's server, which the test binary shares:
	// tests isolate by Namespace. The client is closed via tb.Cleanup.
	Client func(tb testing.TB) redis.UniversalClient
}

// Backends are the three kinds of Redis every store-level test runs on: an embedded
// miniredis (no server needed), a real redis-server (Shared) and a local Redis Cluster
// (SharedCluster).
var Backends = []Backend{
	{Name: "miniredis", Client: Miniredis},
	{Name: "redis", Client: Shared},
	{Name: "Cluster", Client: SharedCluster},
}

// OnBackends runs fn as a parallel subtest on each of Backends, named by the backend,
// with a client on it. Validation that never reaches Redis needs one backend, not this.
func OnBackends(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.Client(t))
		})
	}
}

var (
	miniOnce sync.Once
	mini     *miniredis.Miniredis
	miniErr  error
)

// Miniredis returns a client on an embedded miniredis shared by the test binary (started
// on first use). Tests isolate by Namespace. The client is closed via tb.Cleanup.
func Miniredis(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	// No tb calls inside Do: Fatal would unwind through the Once.
	miniOnce.Do(func() {
		mini = miniredis.NewMiniRedis()
		miniErr = mini.Start()
	})
	if miniErr != nil {
		tb.Fatalf("redistest: start embedded miniredis: %v", miniErr)
	}
	c := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// namespaceChars replaces what a namespace may not hold ('{', '}', control characters)
// and what reads badly in a key (spaces, '/').
var namespaceChars = strings.NewReplacer("/", ".", " ", "_", "{", "(", "}", ")", "\n", "_", "\t", "_")

// Namespace returns a namespace no other test, test binary or earlier run on a shared
// server uses: the test's name, readable in the server's keys, and a random suffix.
func Namespace(tb testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return namespaceChars.Replace(tb.Name()) + "." + hex.EncodeToString(b[:])
}

package headgate_test

import (
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestConformance runs the job contract on every backend; the backend's name is in each
// subtest's name.
func TestConformance(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		rqueuetest.ExerciseBackend(t, func(t testing.TB) *headgate.Store { return rqueuetest.NewStore(t, rdb) })
	})
}

// TestConformanceEval runs the job contract on redis-server with ScriptsEval: the
// EVALSHA/EVAL path, which the other backends take only on miniredis.
func TestConformanceEval(t *testing.T) {
	t.Parallel()
	rdb := redistest.Shared(t)
	rqueuetest.ExerciseBackend(t, func(t testing.TB) *headgate.Store {
		return rqueuetest.NewStoreWith(t, rdb, headgate.StoreConfig{Scripts: headgate.ScriptsEval})
	})
}

// TestConformanceValidation runs the refusals of invalid input, which Go decides before
// any script runs, on one backend: miniredis.
func TestConformanceValidation(t *testing.T) {
	t.Parallel()
	rqueuetest.ExerciseValidation(t, rqueuetest.NewMiniredisStore)
}

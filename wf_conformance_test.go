package headgate_test

import (
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
	"github.com/redis/go-redis/v9"
)

// TestWorkflowConformance runs the workflow store's contract on every backend; the
// backend's name is in each subtest's name.
func TestWorkflowConformance(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		rqueuetest.ExerciseWorkflowStore(t, func(t testing.TB) *headgate.Store { return rqueuetest.NewStore(t, rdb) })
	})
}

package headgate_test

import (
	"testing"

	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestConformance runs the whole job contract on every backend; the backend's name is
// in each subtest's name.
func TestConformance(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		rqueuetest.Exercise(t, rqueuetest.NewMiniredisStore)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rqueuetest.Exercise(t, rqueuetest.NewRedisStore)
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		rqueuetest.Exercise(t, rqueuetest.NewClusterStore)
	})
}

package headgate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/internal/redistest"
	"github.com/headgate/headgate/rqueuetest"
)

// TestWfVersionValidation: a package version a run cannot be pinned to is refused
// before the store is touched. Go-side, so one backend.
func TestWfVersionValidation(t *testing.T) {
	t.Parallel()
	s := rqueuetest.NewStore(t, redistest.Miniredis(t))
	ctx := t.Context()
	long := strings.Repeat("v", headgate.MaxNameBytes-len("default@")+1)
	for name, version := range map[string]string{"control character": "v\n1", "brace": "v{1}", "too long a task queue": long} {
		_, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", PackageVersion: version})
		var invalid *headgate.InvalidError
		if !errors.As(err, &invalid) || invalid.Field != "PackageVersion" {
			t.Errorf("%s: start: %v, want an InvalidError of PackageVersion", name, err)
		}
	}
	if _, err := s.GetWorkflow(ctx, "w"); !errors.Is(err, headgate.ErrWorkflowNotFound) {
		t.Errorf("refused starts wrote the workflow: %v", err)
	}
	longest := long[1:]
	if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", PackageVersion: longest}); err != nil {
		t.Errorf("start on the longest version that fits: %v", err)
	}
}

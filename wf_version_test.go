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
	longest := strings.Repeat("v", headgate.MaxVersionBytes)
	// A queue that takes the longest version and no byte more.
	queue := strings.Repeat("q", headgate.MaxNameBytes-len("@")-len(longest))
	for name, st := range map[string]headgate.WorkflowStart{
		"control character":     {PackageVersion: "v\n1"},
		"brace":                 {PackageVersion: "v{1}"},
		"too long":              {PackageVersion: longest + "v"},
		"too long a task queue": {PackageVersion: longest, Queue: queue + "q"},
		"encoded too long":      {PackageVersion: longest[2:] + ":", Queue: queue},
	} {
		st.WorkflowID, st.WorkflowType = "w", "t"
		_, err := s.StartWorkflow(ctx, st)
		var invalid *headgate.InvalidError
		if !errors.As(err, &invalid) || invalid.Field != "PackageVersion" {
			t.Errorf("%s: start: %v, want an InvalidError of PackageVersion", name, err)
		}
	}
	if _, err := s.GetWorkflow(ctx, "w"); !errors.Is(err, headgate.ErrWorkflowNotFound) {
		t.Errorf("refused starts wrote the workflow: %v", err)
	}
	if _, err := s.StartWorkflow(ctx, headgate.WorkflowStart{WorkflowID: "w", WorkflowType: "t", Queue: queue,
		PackageVersion: longest}); err != nil {
		t.Errorf("start on the longest version that fits: %v", err)
	}
}

// TestWfPackageRouteValidation: a route to a content hash that is no package version is
// refused, and nothing is written. Go-side, so one backend.
func TestWfPackageRouteValidation(t *testing.T) {
	t.Parallel()
	s := rqueuetest.NewStore(t, redistest.Miniredis(t))
	ctx := t.Context()
	for name, tc := range map[string]struct{ hash, want string }{
		"empty":             {"", "is empty"},
		"too long":          {strings.Repeat("h", headgate.MaxVersionBytes+1), "is 129 bytes, longer than the 128 byte limit"},
		"brace":             {"h{1}", "contains a brace"},
		"control character": {"h\x00", "contains a control character"},
	} {
		err := s.PutPackageRoute(ctx, "t", tc.hash)
		var invalid *headgate.InvalidError
		if !errors.As(err, &invalid) || invalid.Field != "ContentHash" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: route: %v, want an InvalidError of ContentHash that says %q", name, err, tc.want)
		}
	}
	if got, err := s.PackageRouteOf(ctx, "t"); err != nil || got != "" {
		t.Errorf("refused routes: the type routes to %q, %v; want none", got, err)
	}
	digest := "sha256:" + strings.Repeat("a", 64)
	if err := s.PutPackageRoute(ctx, "t", digest); err != nil {
		t.Errorf("route to a digest: %v", err)
	}
	if got, err := s.PackageRouteOf(ctx, "t"); err != nil || got != digest {
		t.Errorf("the type routes to %q, %v; want %q", got, err, digest)
	}
}

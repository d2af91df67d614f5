package workflow

import (
	"context"
	"fmt"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/worker"
)

// ServeVersions declares the package versions (content hashes or build ids of the code
// the worker runs) whose runs w serves. A run is pinned to the version it started on
// (StartOptions.Version, else the workflow type's package route, see
// Store.PutPackageRoute) and its tasks go on headgate.VersionedQueue(queue, version):
// for each of its queues q, w also admits from VersionedQueue(q, v) for each v, right
// after q, so the serving order of its queues holds. A worker that does not serve a
// version never takes a task of a run on it. Every worker, versioned or not, serves
// the unversioned runs of its queues.
//
// Go cannot derive a version from the registered code, so name it: a build id, a
// release tag, a commit hash. Call it before w starts; it panics, like Register, on an
// empty or invalid version, after the worker started, or on a second call.
func ServeVersions(w *worker.Worker, versions ...string) {
	if len(versions) == 0 {
		panic("workflow.ServeVersions: no version")
	}
	for i, v := range versions {
		if v == "" {
			panic(fmt.Sprintf("workflow.ServeVersions: versions[%d] is empty", i))
		}
		if err := headgate.ValidateVersion(fmt.Sprintf("workflow.ServeVersions: versions[%d]", i), v); err != nil {
			panic(err.Error())
		}
	}
	worker.ExpandQueues(w, func(q string) []string {
		out := []string{q}
		for _, v := range versions {
			out = append(out, headgate.VersionedQueue(q, v))
		}
		return out
	})
}

// nextRunVersion is the version a run continued as new starts on: the workflow type's
// package route, or the run's own version when the type has no route.
func nextRunVersion(ctx context.Context, store *headgate.Store, row *headgate.WorkflowSummary) (string, error) {
	routed, err := store.PackageRouteOf(ctx, row.WorkflowType)
	if err != nil || routed == "" {
		return row.PackageVersion, err
	}
	return routed, nil
}

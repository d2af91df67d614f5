package headgate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// VersionedQueue is the queue that the tasks of a workflow started on queue and pinned to
// package version go on: queue itself for an unversioned run (version ""), else
// "<queue>@<version>" with the version's '%' and ':' percent-encoded, as a queue name
// takes no colon (wf_task_queue in lua/lib.lua does the same; no name holds a brace). A
// worker that serves version admits from VersionedQueue(q, version) for each of its
// queues q; one that does not never sees the run's tasks.
func VersionedQueue(queue, version string) string {
	if version == "" {
		return queue
	}
	return queue + "@" + versionEscaper.Replace(version)
}

var versionEscaper = strings.NewReplacer("%", "%25", ":", "%3A")

// MaxVersionBytes bounds a package version (a content hash, a build id): room for a
// "sha256:<hex>" digest, and short enough that most queues take "@<version>" and stay
// a queue name.
const MaxVersionBytes = 128

// ValidateVersion checks a package version (a route's content hash, a version a worker
// serves or a deployment lists, a run's pinned version) and returns an *InvalidError
// naming field when it is empty, longer than MaxVersionBytes, or holds what no queue
// name may: a brace or a control character. ':' and '%' are allowed: VersionedQueue
// percent-encodes them.
func ValidateVersion(field, v string) error {
	if v == "" {
		return invalid(field, "is empty")
	}
	if len(v) > MaxVersionBytes {
		return invalid(field, "is %d bytes, longer than the %d byte limit of a package version", len(v), MaxVersionBytes)
	}
	return validateName(field, v, true)
}

// validateVersion checks a package version a run on queue is pinned to ("" is none): a
// version, and one that keeps the run's task queue a valid queue name.
func validateVersion(field, queue, version string) error {
	if version == "" {
		return nil
	}
	if err := ValidateVersion(field, version); err != nil {
		return err
	}
	if q := VersionedQueue(queue, version); len(q) > MaxNameBytes {
		return invalid(field, "makes the task queue %q longer than %d bytes", q, MaxNameBytes)
	}
	return nil
}

// versionQueueError is the reply of a script that found a version (a package route's,
// read in the script) that would put a run's tasks or step jobs on a queue longer than
// MaxNameBytes: an *InvalidError of PackageVersion. Nothing was written.
func versionQueueError(version, queue string) error {
	return invalid("PackageVersion", "%q makes the task queue %q longer than %d bytes: use a shorter version or queue",
		version, queue, MaxNameBytes)
}

// OpenRunsByVersion returns how many runs are open (not closed: running or paused) on
// each of versions, so an operator can tell when a draining version has none left. The
// counts are kept exactly by the scripts that open and close runs (a start, a child, a
// continue-as-new, a retry; a commit that ends a run, a terminate). A version no open
// run is on counts 0. A run that was open before the counts were kept (an earlier
// headgate release) is counted from its next event on.
func (s *Store) OpenRunsByVersion(ctx context.Context, versions ...string) (map[string]int64, error) {
	if err := s.checkFormat(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(versions))
	if len(versions) == 0 {
		return out, nil
	}
	v, err := s.rdb.HMGet(ctx, s.keys.VersionRuns(), versions...).Result()
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		n := int64(0)
		if str, ok := x.(string); ok {
			if n, err = strconv.ParseInt(str, 10, 64); err != nil {
				return nil, fmt.Errorf("headgate: open runs of version %q: %q is not a count", versions[i], str)
			}
		}
		out[versions[i]] = n
	}
	return out, nil
}

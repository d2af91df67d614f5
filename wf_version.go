package headgate

import "strings"

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

// validateVersion checks a package version a run on queue is pinned to: a name, and
// one that keeps the run's task queue a valid queue name.
func validateVersion(field, queue, version string) error {
	if err := validateName(field, version, true); err != nil {
		return err
	}
	if q := VersionedQueue(queue, version); len(q) > MaxNameBytes {
		return invalid(field, "makes the task queue %q longer than %d bytes", q, MaxNameBytes)
	}
	return nil
}

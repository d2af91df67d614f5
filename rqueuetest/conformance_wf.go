package rqueuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// ExerciseWorkflowStore runs the workflow store's contract (the event store of seed 003:
// histories, listings, timers, visibility, the namespace registry, packages, worker
// deployments, workloops) against stores made by newStore. Each case runs as a parallel
// subtest on its own store and reports every violation it finds.
func ExerciseWorkflowStore(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	var all []conformanceCase
	for _, cases := range [][]conformanceCase{
		wfAppendCases, wfHistoryCases, wfListCases, wfListWorkflowsCases, wfRecordVisibilityCases, wfRemoveVisibilityCases,
		wfScheduleTimerCases, wfRetireTimerCases, wfExpiredTimersCases, wfFireTimersCases,
		wfNamespaceCases, wfRegisterNamespaceCases, wfPutNamespaceCases, wfSetNamespacePlacementCases, wfDeprecateNamespaceCases,
		wfPutPackageCases, wfPutPackageRouteCases, wfDeletePackageCases,
		wfPutWorkerDeploymentCases, wfSetDesiredStateCases, wfDeleteWorkerDeploymentCases, wfWriteRawWorkerDeploymentCases,
		wfWorkloopCases, wfPutWorkloopCases, wfRemoveWorkloopCases, wfPutInvariantRecordCases,
		wfStartCases, wfSignalCases, wfCommitTaskCases, wfCommitStepCases,
		wfPauseCases, wfResumeCases, wfTerminateCases, wfRetryCases, wfVersionCases,
	} {
		all = append(all, cases...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}

// at is the seed's recorded_at: the epoch plus whole seconds.
func at(seconds int) time.Time { return epoch.Add(time.Duration(seconds) * time.Second) }

func wfStarted(seq int64, typ string) headgate.Event {
	return headgate.Event{Seq: seq, RecordedAt: at(int(seq)), Kind: headgate.EventWorkflowStarted, WorkflowType: typ,
		RunID: "run-1", PackageVersion: "pkg-a", Input: []byte(`{"label":"input"}`)}
}

func wfCompleted(seq int64) headgate.Event {
	return headgate.Event{Seq: seq, RecordedAt: at(int(seq)), Kind: headgate.EventWorkflowCompleted, Result: []byte(`{"label":"result"}`)}
}

func wfFailed(seq int64) headgate.Event {
	return headgate.Event{Seq: seq, RecordedAt: at(int(seq)), Kind: headgate.EventWorkflowFailed,
		Error: &headgate.WorkflowError{Message: "failed"}}
}

func wfPaused(seq int64) headgate.Event {
	return headgate.Event{Seq: seq, RecordedAt: at(int(seq)), Kind: headgate.EventWorkflowPaused, Reason: "hold", Operator: "ops"}
}

func wfEvent(seq int64, kind headgate.EventKind) headgate.Event {
	return headgate.Event{Seq: seq, RecordedAt: at(int(seq)), Kind: kind}
}

func wfID(n int) string { return fmt.Sprintf("wf-%04d", n) }

func mustAppend(t testing.TB, ctx context.Context, s *headgate.Store, id string, expected int64, events ...headgate.Event) {
	t.Helper()
	if err := s.Append(ctx, id, events, expected); err != nil {
		t.Fatalf("append to %s at %d: %v", id, expected, err)
	}
}

func mustHistory(t testing.TB, ctx context.Context, s *headgate.Store, id string) []headgate.Event {
	t.Helper()
	h, err := s.ReadHistory(ctx, id)
	if err != nil {
		t.Fatalf("read history of %s: %v", id, err)
	}
	return h
}

func listActive(t testing.TB, ctx context.Context, s *headgate.Store) []string {
	t.Helper()
	return allPages(t, "list active", func(c string) ([]string, string, error) { return s.ListActive(ctx, c, 2) })
}

func listPaused(t testing.TB, ctx context.Context, s *headgate.Store) []string {
	t.Helper()
	return allPages(t, "list paused", func(c string) ([]string, string, error) { return s.ListPaused(ctx, c, 2) })
}

func query(t testing.TB, ctx context.Context, s *headgate.Store, f headgate.WorkflowFilter, limit int) []*headgate.WorkflowSummary {
	t.Helper()
	return allPages(t, "query", func(c string) ([]*headgate.WorkflowSummary, string, error) { return s.Query(ctx, f, c, limit) })
}

// sameEvents compares histories field by field, times by instant.
func sameEvents(a, b []headgate.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.RecordedAt.Equal(y.RecordedAt) || !x.FireAt.Equal(y.FireAt) {
			return false
		}
		x.RecordedAt, y.RecordedAt, x.FireAt, y.FireAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if fmt.Sprintf("%+v", x) != fmt.Sprintf("%+v", y) {
			return false
		}
	}
	return true
}

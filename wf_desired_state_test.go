package headgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestSetDesiredStateUnchanged: setting a deployment to the state it is in writes
// nothing: DesiredChangedAt (what "draining since" shows) and UpdatedAt keep the time of
// the change, and the per-version counts stay.
func TestSetDesiredStateUnchanged(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		_, _, err := s.PutWorkerDeployment(ctx, WorkerDeployment{Name: "blue", Versions: []string{"v1"}})
		must(err)
		must(s.AdvanceClock(ctx, time.Minute))
		first, err := s.SetDesiredState(ctx, "blue", DesiredDraining)
		must(err)
		if first == nil || first.Desired != DesiredDraining || !first.DesiredChangedAt.Equal(frozenEpoch.Add(time.Minute)) {
			t.Fatalf("first drain: %+v", first)
		}
		must(s.AdvanceClock(ctx, time.Hour))
		again, err := s.SetDesiredState(ctx, "blue", DesiredDraining)
		must(err)
		if again == nil || again.Desired != DesiredDraining || !again.DesiredChangedAt.Equal(first.DesiredChangedAt) ||
			!again.UpdatedAt.Equal(first.UpdatedAt) {
			t.Errorf("second drain: %+v, want the first's stamps (changed %s, updated %s)", again, first.DesiredChangedAt, first.UpdatedAt)
		}
		stored, err := s.GetWorkerDeployment(ctx, "blue")
		must(err)
		if !stored.DesiredChangedAt.Equal(first.DesiredChangedAt) {
			t.Errorf("stored desired_changed_at %s, want %s", stored.DesiredChangedAt, first.DesiredChangedAt)
		}
		if _, err := s.StartWorkflow(ctx, WorkflowStart{WorkflowID: "w", WorkflowType: "t", PackageVersion: "v1"}); err == nil {
			t.Errorf("a run started on v1 while its only deployment drains")
		}
	})
}

// TestListWorkerDeploymentsRefusesAForeignCursor: a cursor the listing did not print is
// an *InvalidError of "cursor", not a position that reads as the end of the listing;
// the cursors it prints page on.
func TestListWorkerDeploymentsRefusesAForeignCursor(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		for _, name := range []string{"blue", "green"} {
			_, _, err := s.PutWorkerDeployment(ctx, WorkerDeployment{Name: name, Versions: []string{"v1"}})
			must(err)
		}
		page, next, err := s.ListWorkerDeployments(ctx, "", 1)
		must(err)
		if len(page.Deployments) != 1 || page.Deployments[0].Name != "blue" || next == "" {
			t.Fatalf("first page: %+v, next %q", page, next)
		}
		page, next, err = s.ListWorkerDeployments(ctx, next, 1)
		must(err)
		if len(page.Deployments) != 1 || page.Deployments[0].Name != "green" || next != "" {
			t.Fatalf("second page: %+v, next %q", page, next)
		}
		for _, cursor := range []string{"xyz", "no!", "ew", "Gw"} {
			_, _, err := s.ListWorkerDeployments(ctx, cursor, 10)
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != "cursor" {
				t.Errorf("cursor %q: %v, want an *InvalidError of cursor", cursor, err)
			}
		}
	})
}

package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfDeploymentCases cover worker deployments.
var wfDeploymentCases = []conformanceCase{
	{"WfDeployment/PutPreservesDesiredDelete", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		o, d, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1"}})
		if err != nil || o != headgate.PutCreated || d.Desired != headgate.DesiredActive || !d.CreatedAt.Equal(epoch) {
			t.Fatalf("create: %s %+v %v", o, d, err)
		}
		advance(t, ctx, s, time.Minute)
		d, err = s.SetDesiredState(ctx, "blue", headgate.DesiredDraining)
		if err != nil || d == nil || d.Desired != headgate.DesiredDraining || !d.DesiredChangedAt.Equal(epoch.Add(time.Minute)) ||
			!slices.Equal(d.Versions, []string{"v1"}) {
			t.Errorf("set desired: %+v %v", d, err)
		}
		advance(t, ctx, s, time.Minute)
		// A put takes the new spec and keeps creation time and desired state.
		o, d, err = s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "blue", Versions: []string{"v1", "v2"},
			Desired: headgate.DesiredActive})
		if err != nil || o != headgate.PutReplaced || d.Desired != headgate.DesiredDraining || !d.CreatedAt.Equal(epoch) ||
			!d.UpdatedAt.Equal(epoch.Add(2*time.Minute)) || !slices.Equal(d.Versions, []string{"v1", "v2"}) {
			t.Errorf("replace: %s %+v %v", o, d, err)
		}
		if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got == nil || got.Desired != headgate.DesiredDraining {
			t.Errorf("get: %+v %v", got, err)
		}
		if d, err := s.SetDesiredState(ctx, "ghost", headgate.DesiredDrained); err != nil || d != nil {
			t.Errorf("set desired of an absent deployment: %+v %v", d, err)
		}
		existed, d, err := s.DeleteWorkerDeployment(ctx, "blue")
		if err != nil || !existed || d == nil || d.Name != "blue" {
			t.Errorf("delete: %v %+v %v", existed, d, err)
		}
		if existed, d, err := s.DeleteWorkerDeployment(ctx, "blue"); err != nil || existed || d != nil {
			t.Errorf("delete again: %v %+v %v", existed, d, err)
		}
		if got, err := s.GetWorkerDeployment(ctx, "blue"); err != nil || got != nil {
			t.Errorf("get after delete: %+v %v", got, err)
		}
	}},
	{"WfDeployment/PoisonedRowListedReplacedDeleted", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		if _, _, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "a-good"}); err != nil {
			t.Fatalf("put: %v", err)
		}
		for _, name := range []string{"b-poison", "c-poison"} {
			if err := s.WriteRawWorkerDeployment(ctx, name, []byte("\x00not a record")); err != nil {
				t.Fatalf("write raw: %v", err)
			}
		}
		var good []string
		var bad []string
		cursor := ""
		for {
			l, next, err := s.ListWorkerDeployments(ctx, cursor, 1)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			for _, d := range l.Deployments {
				good = append(good, d.Name)
			}
			for _, u := range l.Undecodable {
				if u.Error == "" {
					t.Errorf("undecodable %s without an error", u.Name)
				}
				bad = append(bad, u.Name)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !equalStrings(good, []string{"a-good"}) || !equalStrings(bad, []string{"b-poison", "c-poison"}) {
			t.Errorf("listed %q and undecodable %q", good, bad)
		}
		if _, err := s.GetWorkerDeployment(ctx, "b-poison"); err == nil {
			t.Errorf("get of a poisoned row decoded")
		}
		err := unchanged(t, ctx, s, "set desired of a poisoned row", func() error {
			_, err := s.SetDesiredState(ctx, "b-poison", headgate.DesiredDrained)
			return err
		})
		wantErr[*headgate.UndecodableError](t, err)
		// A put over a poisoned row replaces it as if new.
		o, d, err := s.PutWorkerDeployment(ctx, headgate.WorkerDeployment{Name: "b-poison", Desired: headgate.DesiredDrained})
		if err != nil || o != headgate.PutReplaced || d.Desired != headgate.DesiredDrained || !d.CreatedAt.Equal(epoch) {
			t.Errorf("put over poison: %s %+v %v", o, d, err)
		}
		// Delete of a poisoned row: existed, nothing decoded.
		if existed, d, err := s.DeleteWorkerDeployment(ctx, "c-poison"); err != nil || !existed || d != nil {
			t.Errorf("delete poison: %v %+v %v", existed, d, err)
		}
	}},
}

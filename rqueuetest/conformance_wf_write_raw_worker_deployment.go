package rqueuetest

import (
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// wfWriteRawWorkerDeploymentCases cover WriteRawWorkerDeployment
// (lua/wf_write_raw_worker_deployment.lua), which stores bytes as a deployment's row: how
// listings, puts, desired-state changes and deletes treat a poisoned row.
var wfWriteRawWorkerDeploymentCases = []conformanceCase{
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
		pages := allPages(t, "list", func(c string) ([]*headgate.WorkerDeploymentListing, string, error) {
			l, next, err := s.ListWorkerDeployments(ctx, c, 1)
			return []*headgate.WorkerDeploymentListing{l}, next, err
		})
		for _, l := range pages {
			for _, d := range l.Deployments {
				good = append(good, d.Name)
			}
			for _, u := range l.Undecodable {
				if u.Error == "" {
					t.Errorf("undecodable %s without an error", u.Name)
				}
				bad = append(bad, u.Name)
			}
		}
		if !slices.Equal(good, []string{"a-good"}) || !slices.Equal(bad, []string{"b-poison", "c-poison"}) {
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

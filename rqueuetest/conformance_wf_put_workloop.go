package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfPutWorkloopCases cover PutWorkloop (lua/wf_put_workloop.lua): a workloop's row,
// replaced whole, and its place in the due sweep.
var wfPutWorkloopCases = []conformanceCase{
	{"WfWorkloop/PutReplacesAndReschedules", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		due := func(what string, want ...string) {
			t.Helper()
			got, err := s.DueWorkloops(ctx, epoch, 100)
			if err != nil {
				t.Fatalf("%s: due: %v", what, err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.LoopID)
			}
			if !slices.Equal(ids, want) {
				t.Errorf("%s: due %q, want %q", what, ids, want)
			}
		}
		put := func(r headgate.WorkloopRecord) {
			t.Helper()
			if err := s.PutWorkloop(ctx, r); err != nil {
				t.Fatalf("put %s: %v", r.LoopID, err)
			}
		}
		put(headgate.WorkloopRecord{LoopID: "l-1", NextCheckAt: epoch.Add(time.Hour), Spec: []byte("a")})
		due("not yet due")
		put(headgate.WorkloopRecord{LoopID: "l-1", NextCheckAt: epoch.Add(-time.Second), Spec: []byte("b")})
		due("moved earlier", "l-1")
		if r, err := s.GetWorkloop(ctx, "l-1"); err != nil || r == nil || string(r.Spec) != "b" || !r.NextCheckAt.Equal(epoch.Add(-time.Second)) {
			t.Errorf("get: %+v %v, want the second put", r, err)
		}
		// Without a next check a loop is never due, but still listed.
		put(headgate.WorkloopRecord{LoopID: "l-1"})
		due("unscheduled")
		if r, err := s.GetWorkloop(ctx, "l-1"); err != nil || r == nil || !r.NextCheckAt.IsZero() || len(r.Spec) != 0 {
			t.Errorf("get unscheduled: %+v %v", r, err)
		}
		if l, _, err := s.ListWorkloops(ctx, "", 10); err != nil || len(l.Workloops) != 1 || l.Workloops[0].LoopID != "l-1" {
			t.Errorf("list: %+v %v", l, err)
		}
		for name, r := range map[string]headgate.WorkloopRecord{
			"no id":        {NextCheckAt: epoch},
			"before 1970":  {LoopID: "l-2", NextCheckAt: time.UnixMilli(-1)},
			"spec too big": {LoopID: "l-2", Spec: make([]byte, headgate.MaxPayloadBytes+1)},
		} {
			err := unchanged(t, ctx, s, "put with "+name, func() error { return s.PutWorkloop(ctx, r) })
			wantErr[*headgate.InvalidError](t, err)
		}
	}},
}

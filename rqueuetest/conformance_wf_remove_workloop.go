package rqueuetest

import (
	"testing"

	"github.com/headgate/headgate"
)

// wfRemoveWorkloopCases cover RemoveWorkloop (lua/wf_remove_workloop.lua): the row and its
// index entries go, decodable or not.
var wfRemoveWorkloopCases = []conformanceCase{
	{"WfWorkloop/RemoveForgetsTheLoop", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, id := range []string{"l-1", "l-2"} {
			if err := s.PutWorkloop(ctx, headgate.WorkloopRecord{LoopID: id, NextCheckAt: epoch}); err != nil {
				t.Fatalf("put %s: %v", id, err)
			}
		}
		if err := s.WriteRawWorkloop(ctx, "l-poison", []byte(`{"next_check_at":1,"bogus":true}`)); err != nil {
			t.Fatalf("write raw: %v", err)
		}
		for _, id := range []string{"l-1", "l-poison"} {
			if ok, err := s.RemoveWorkloop(ctx, id); err != nil || !ok {
				t.Errorf("remove %s: %v %v, want true", id, ok, err)
			}
		}
		if r, err := s.GetWorkloop(ctx, "l-1"); err != nil || r != nil {
			t.Errorf("get after remove: %+v %v", r, err)
		}
		if due, err := s.DueWorkloops(ctx, epoch, 100); err != nil || len(due) != 1 || due[0].LoopID != "l-2" {
			t.Errorf("due after remove: %+v %v, want l-2 alone", due, err)
		}
		if l, _, err := s.ListWorkloops(ctx, "", 10); err != nil || len(l.Workloops) != 1 || len(l.Undecodable) != 0 {
			t.Errorf("list after remove: %+v %v, want l-2 alone", l, err)
		}
		writesNothing(t, ctx, s, "a remove of no loop", func() {
			if ok, err := s.RemoveWorkloop(ctx, "l-1"); err != nil || ok {
				t.Errorf("remove again: %v %v, want false", ok, err)
			}
		})
	}},
}

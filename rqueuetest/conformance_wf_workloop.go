package rqueuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfWorkloopCases cover the reads of workloops (wf_workloop.go): the due sweep, the
// listing and how both treat a poisoned row.
var wfWorkloopCases = []conformanceCase{
	{"WfWorkloop/DueSweepAndPoison", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, r := range []headgate.WorkloopRecord{
			{LoopID: "l-due", NextCheckAt: epoch.Add(-time.Second), Spec: []byte("s")},
			{LoopID: "l-boundary", NextCheckAt: epoch},
			{LoopID: "l-later", NextCheckAt: epoch.Add(time.Hour)},
			{LoopID: "l-idle"},
		} {
			if err := s.PutWorkloop(ctx, r); err != nil {
				t.Fatalf("put %s: %v", r.LoopID, err)
			}
		}
		// Poisoned bytes that still carry a due time, and poison without one.
		if err := s.WriteRawWorkloop(ctx, "l-poison-due", []byte(`{"next_check_at":1,"bogus":true}`)); err != nil {
			t.Fatalf("write raw: %v", err)
		}
		if err := s.WriteRawWorkloop(ctx, "l-poison", []byte("\x00garbage")); err != nil {
			t.Fatalf("write raw: %v", err)
		}
		due, err := s.DueWorkloops(ctx, epoch, 100)
		if err != nil {
			t.Fatalf("due: %v", err)
		}
		var ids []string
		for _, r := range due {
			ids = append(ids, r.LoopID)
		}
		if !slices.Equal(ids, []string{"l-due", "l-boundary"}) {
			t.Errorf("due %q, want [l-due l-boundary] (the poisoned due row skipped)", ids)
		}
		l, next, err := s.ListWorkloops(ctx, "", 100)
		if err != nil || next != "" {
			t.Fatalf("list: %v %q", err, next)
		}
		var listed, undecodable []string
		for _, r := range l.Workloops {
			listed = append(listed, r.LoopID)
		}
		for _, u := range l.Undecodable {
			undecodable = append(undecodable, u.LoopID)
		}
		if !slices.Equal(listed, []string{"l-boundary", "l-due", "l-idle", "l-later"}) ||
			!slices.Equal(undecodable, []string{"l-poison", "l-poison-due"}) {
			t.Errorf("listed %q, undecodable %q", listed, undecodable)
		}
		if r, err := s.GetWorkloop(ctx, "l-due"); err != nil || r == nil || string(r.Spec) != "s" || !r.NextCheckAt.Equal(epoch.Add(-time.Second)) {
			t.Errorf("get: %+v %v", r, err)
		}
		// Rescheduling moves a loop out of the sweep; removing forgets it.
		if err := s.PutWorkloop(ctx, headgate.WorkloopRecord{LoopID: "l-due", NextCheckAt: epoch.Add(time.Hour)}); err != nil {
			t.Fatalf("reschedule: %v", err)
		}
		if ok, err := s.RemoveWorkloop(ctx, "l-boundary"); err != nil || !ok {
			t.Errorf("remove: %v %v", ok, err)
		}
		if ok, err := s.RemoveWorkloop(ctx, "l-boundary"); err != nil || ok {
			t.Errorf("remove again: %v %v", ok, err)
		}
		if due, err := s.DueWorkloops(ctx, epoch, 100); err != nil || len(due) != 0 {
			t.Errorf("due after reschedule and remove: %+v %v", due, err)
		}
	}},
}

package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfWorkloopCases cover workloops, their due sweep and invariant records.
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
		if !equalStrings(ids, []string{"l-due", "l-boundary"}) {
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
		if !equalStrings(listed, []string{"l-boundary", "l-due", "l-idle", "l-later"}) ||
			!equalStrings(undecodable, []string{"l-poison", "l-poison-due"}) {
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
	{"WfWorkloop/InvariantGenerationsPruned", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		put := func(sec int, state string, pruneBefore time.Time) int64 {
			t.Helper()
			n, err := s.PutInvariantRecord(ctx, headgate.InvariantStateRecord{LoopID: "l:1", Invariant: "inv",
				RecordedAt: at(sec), State: []byte(state)}, pruneBefore)
			if err != nil {
				t.Fatalf("put invariant: %v", err)
			}
			return n
		}
		if n := put(1, "a", at(0)); n != 0 {
			t.Errorf("first put removed %d", n)
		}
		put(2, "b", at(0))
		put(3, "c", at(0))
		cur, err := s.CurrentInvariantRecord(ctx, "l:1", "inv")
		if err != nil || cur == nil || string(cur.State) != "c" || !cur.RecordedAt.Equal(at(3)) {
			t.Errorf("current: %+v %v", cur, err)
		}
		gens, err := s.InvariantRecordGenerations(ctx, "l:1", "inv")
		if err != nil || len(gens) != 2 || string(gens[0].State) != "b" || string(gens[1].State) != "a" {
			t.Errorf("generations: %+v %v", gens, err)
		}
		// Pruning in the same write applies to the generation this write rotated in.
		if n := put(4, "d", at(3)); n != 2 {
			t.Errorf("prune before 3 removed %d, want 2 (a, b)", n)
		}
		gens, err = s.InvariantRecordGenerations(ctx, "l:1", "inv")
		if err != nil || len(gens) != 1 || string(gens[0].State) != "c" {
			t.Errorf("generations after prune: %+v %v", gens, err)
		}
		if n := put(5, "e", at(100)); n != 2 {
			t.Errorf("prune everything removed %d, want 2 (c, d)", n)
		}
		if cur, err := s.CurrentInvariantRecord(ctx, "l:1", "inv"); err != nil || cur == nil || string(cur.State) != "e" {
			t.Errorf("the current generation was pruned: %+v %v", cur, err)
		}
		if cur, err := s.CurrentInvariantRecord(ctx, "l:1", "other"); err != nil || cur != nil {
			t.Errorf("another invariant: %+v %v", cur, err)
		}
		// The cap bounds what one invariant keeps.
		for i := range headgate.InvariantGenerationsMax + 5 {
			put(10+i, "x", at(0))
		}
		if gens, err := s.InvariantRecordGenerations(ctx, "l:1", "inv"); err != nil || len(gens) != headgate.InvariantGenerationsMax {
			t.Errorf("%d generations kept, want the cap %d (%v)", len(gens), headgate.InvariantGenerationsMax, err)
		}
	}},
}

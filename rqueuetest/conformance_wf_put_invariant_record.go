package rqueuetest

import (
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// wfPutInvariantRecordCases cover PutInvariantRecord (lua/wf_put_invariant_record.lua):
// generations of an invariant's state, pruned in the same write and capped.
var wfPutInvariantRecordCases = []conformanceCase{
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

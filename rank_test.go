package headgate

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// legacyRankOf is the member a build before binary ranks wrote for a partition member
// m of a job of priority prio due at sched (ms): 25 digits, then the id.
func legacyRankOf(m string, prio int32, sched int64) string {
	return fmt.Sprintf("%010d%015d", 2147483647-int64(prio), sched) + m[rankWidth:]
}

// Partition members of both rank formats, binary (rank in lua/lib.lua) and the 25-digit
// one written before (legacy_rank), are admitted, explained, counted in the waits and
// removed by a cancel or a bulk cancel; members of the legacy format go first.
func TestPartitionLegacyRanks(t *testing.T) {
	t.Parallel()
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		t0 := frozenEpoch
		pk := s.keys.Partition(QueueDefault, "")
		members := func() []string {
			t.Helper()
			m, err := rdb.ZRange(ctx, pk, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		// The old build's jobs: y before z by priority, then by id.
		old := []Envelope{{ID: "z1", Kind: "k"}, {ID: "z2", Kind: "k"}, {ID: "y1", Kind: "k", Priority: 5},
			{ID: "z3", Kind: "k"}, {ID: "z4", Kind: "kb"}}
		if _, err := s.Enqueue(ctx, old...); err != nil {
			t.Fatal(err)
		}
		whyBefore, err := s.Why(ctx, "z2", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members() {
			if len(m) != rankWidth+2 || m[4] >= '0' {
				t.Fatalf("member %q: want an 11-byte binary rank and the id", m)
			}
			prio := int32(0)
			if m[rankWidth:] == "y1" {
				prio = 5
			}
			must(rdb.ZRem(ctx, pk, m).Err())
			must(rdb.ZAdd(ctx, pk, redis.Z{Member: legacyRankOf(m, prio, t0.UnixMilli())}).Err())
		}
		whyAfter, err := s.Why(ctx, "z2", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(whyBefore.Reasons, whyAfter.Reasons) {
			t.Errorf("why z2 with a legacy rank: %+v, want %+v", whyAfter.Reasons, whyBefore.Reasons)
		}
		// This build's jobs, enqueued later.
		if _, err := s.Enqueue(ctx, Envelope{ID: "a1", Kind: "k", Priority: 9}, Envelope{ID: "a2", Kind: "kb"}); err != nil {
			t.Fatal(err)
		}
		must(s.AdvanceClock(ctx, time.Minute))
		g, err := s.Gauges(ctx, &GaugesOptions{Partitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		if w := g.Waits[QueueDefault].Wait[""]; w != time.Minute {
			t.Errorf("gauge wait of the legacy head: %s, want 1m", w)
		}
		must(s.Cancel(ctx, "z3"))
		if r, err := s.BulkCancel(ctx, JobFilter{Queue: QueueDefault, State: StateAvailable, Kind: "kb"}, nil); err != nil || r.Moved != 2 {
			t.Fatalf("bulk cancel: %+v, %v; want 2 moved", r, err)
		}
		var ids []string
		for _, m := range members() {
			w := rankWidth
			if m[4] >= '0' {
				w = legacyRankWidth
			}
			ids = append(ids, m[w:])
		}
		if want := []string{"y1", "z1", "z2", "a1"}; !slices.Equal(ids, want) {
			t.Fatalf("partition after the cancels: %v, want %v", ids, want)
		}
		claims, err := s.Admit(ctx, AdmitRequest{Worker: "w", LeaseID: "l", Queues: []string{QueueDefault}, Capacity: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range claims {
			got = append(got, c.Envelope.ID)
		}
		if want := []string{"y1", "z1", "z2", "a1"}; !slices.Equal(got, want) {
			t.Errorf("admitted %v, want %v", got, want)
		}
		if n, err := rdb.Exists(ctx, pk).Result(); err != nil || n != 0 {
			t.Errorf("partition after admitting all: exists %d, %v; want gone", n, err)
		}
	})
}

// rankDue reads the due time of both rank formats and refuses what is neither.
func TestRankDue(t *testing.T) {
	t.Parallel()
	const due = int64(1_800_000_000_123)
	binary := string([]byte{0x7f, 0xff, 0xff, 0xfa, 0, 0x01, 0xa3, 0x18, 0x5c, 0x50, 0x7b}) + "id"
	for _, tc := range []struct {
		m    string
		want int64
		ok   bool
	}{
		{binary, due, true},
		{fmt.Sprintf("%010d%015d", 2147483642, due) + "id", due, true},
		{binary[:rankWidth-1], 0, false},
		{"2147483647000", 0, false},
		{"", 0, false},
	} {
		if got, ok := rankDue(tc.m); got != tc.want || ok != tc.ok {
			t.Errorf("rankDue(%q) = %d, %v; want %d, %v", tc.m, got, ok, tc.want, tc.ok)
		}
	}
}

package rqueuetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// listIDs pages through a listing to its end and returns the ids in order.
func listIDs(t testing.TB, ctx context.Context, s *headgate.Store, f headgate.JobFilter, p headgate.Page) []string {
	t.Helper()
	return allPages(t, fmt.Sprintf("ListJobs(%+v, %+v)", f, p), func(cursor string) ([]string, string, error) {
		p.Cursor = cursor
		page, err := s.ListJobs(ctx, f, p)
		if err != nil {
			return nil, "", err
		}
		ids := make([]string, len(page.Jobs))
		for i, j := range page.Jobs {
			ids[i] = j.ID
		}
		return ids, page.Next, nil
	})
}

// listJobsCases cover ListJobs over the job indexes and the counts per partition.
var listJobsCases = []conformanceCase{
	{"ListJobs/CursorOfAnotherFilter", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		for _, p := range []string{"t1", "t2"} {
			for i := range 4 {
				e := job(fmt.Sprintf("%s-%d", p, i))
				e.PartitionKey = p
				mustEnqueue(t, ctx, s, e)
				advance(t, ctx, s, time.Millisecond)
			}
		}
		for _, oldest := range []bool{false, true} {
			f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t1"}
			first, err := s.ListJobs(ctx, f, headgate.Page{Limit: 2, Oldest: oldest})
			if err != nil || len(first.Jobs) != 2 || first.Next == "" {
				t.Fatalf("first page of %+v: %+v, %v", f, first, err)
			}
			for _, g := range otherFilters(f, headgate.StateScheduled) {
				err := unchanged(t, ctx, s, fmt.Sprintf("ListJobs(%+v) with a cursor of %+v", g, f), func() error {
					_, err := s.ListJobs(ctx, g, headgate.Page{Limit: 2, Oldest: oldest, Cursor: first.Next})
					return err
				})
				var cf *headgate.CursorFilterError
				var inv *headgate.InvalidError
				if !errors.As(err, &cf) || cf.Filter != g || !errors.As(err, &inv) || inv.Field != "Cursor" {
					t.Errorf("ListJobs(%+v) with a cursor of %+v: %v, want *CursorFilterError, an *InvalidError for Cursor", g, f, err)
				}
			}
			// With its own filter and order the cursor goes on, and so does one of the
			// format before the digest (a listing paged across an upgrade).
			want := []string{"t1-1", "t1-0"}
			if oldest {
				want = []string{"t1-2", "t1-3"}
			}
			for _, c := range []string{first.Next, oldFormatCursor(t, first.Next)} {
				next, err := s.ListJobs(ctx, f, headgate.Page{Limit: 2, Oldest: oldest, Cursor: c})
				if err != nil {
					t.Fatalf("next page of %+v from %q: %v", f, c, err)
				}
				var got []string
				for _, j := range next.Jobs {
					got = append(got, j.ID)
				}
				if !slices.Equal(got, want) {
					t.Errorf("next page of %+v (oldest %v) from %q = %v, want %v", f, oldest, c, got, want)
				}
			}
		}
	}},
	{"ListJobs/Filters", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mk := func(id, kind, part, fp string, tags ...string) headgate.Envelope {
			e := job(id)
			e.Kind, e.PartitionKey, e.Fingerprint, e.Tags = kind, part, fp, tags
			return e
		}
		mustEnqueue(t, ctx, s, mk("a1", "k:a", "t1", "f1", "red"), mk("a2", "k:a", "t2", "", "red", "blue"))
		advance(t, ctx, s, time.Minute)
		mustEnqueue(t, ctx, s, mk("b1", "k:b", "t1", "f1", "blue"), mk("b2", "k:b", "", "f2"))
		advance(t, ctx, s, time.Minute)
		mustEnqueue(t, ctx, s, mk("a3", "k:a", "t1", "", "red"))
		avail := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}
		for _, tc := range []struct {
			name string
			f    func(*headgate.JobFilter)
			want []string // oldest first
		}{
			{"All", func(*headgate.JobFilter) {}, []string{"a1", "a2", "b1", "b2", "a3"}},
			{"Kind", func(f *headgate.JobFilter) { f.Kind = "k:a" }, []string{"a1", "a2", "a3"}},
			{"Partition", func(f *headgate.JobFilter) { f.Partition = "t1" }, []string{"a1", "b1", "a3"}},
			{"Tag", func(f *headgate.JobFilter) { f.Tag = "blue" }, []string{"a2", "b1"}},
			{"Fingerprint", func(f *headgate.JobFilter) { f.Fingerprint = "f1" }, []string{"a1", "b1"}},
			{"KindAndPartition", func(f *headgate.JobFilter) { f.Kind, f.Partition = "k:b", "t1" }, []string{"b1"}},
			{"PartitionAndTag", func(f *headgate.JobFilter) { f.Partition, f.Tag = "t1", "red" }, []string{"a1", "a3"}},
			{"FingerprintPartitionTag", func(f *headgate.JobFilter) { f.Fingerprint, f.Partition, f.Tag = "f1", "t1", "blue" },
				[]string{"b1"}},
			{"OlderThan", func(f *headgate.JobFilter) { f.OlderThan = time.Minute }, []string{"a1", "a2", "b1", "b2"}},
			{"None", func(f *headgate.JobFilter) { f.Tag = "green" }, nil},
		} {
			f := avail
			tc.f(&f)
			for _, limit := range []int{1, 2, 50} {
				if got := listIDs(t, ctx, s, f, headgate.Page{Limit: limit, Oldest: true}); !slices.Equal(got, tc.want) {
					t.Errorf("%s, oldest first, pages of %d: %v, want %v", tc.name, limit, got, tc.want)
				}
				newest := slices.Clone(tc.want)
				slices.Reverse(newest)
				if got := listIDs(t, ctx, s, f, headgate.Page{Limit: limit}); !slices.Equal(got, newest) {
					t.Errorf("%s, newest first, pages of %d: %v, want %v", tc.name, limit, got, newest)
				}
			}
		}
		// Moves: a2 is cancelled (it leaves available and its filter indexes with it), a1 is
		// edited into another partition and tag (filed again, at the time it entered the state).
		if err := s.Cancel(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Edit(ctx, "a1", headgate.JobEdit{PartitionKey: new("t9"), Tags: &[]string{"green"}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    headgate.JobFilter
			want []string
		}{
			{headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, []string{"a1", "b1", "b2", "a3"}},
			{headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Tag: "red"}, []string{"a3"}},
			{headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t9", Tag: "green"}, []string{"a1"}},
			{headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled, Tag: "blue"}, []string{"a2"}},
		} {
			if got := listIDs(t, ctx, s, tc.f, headgate.Page{Oldest: true}); !slices.Equal(got, tc.want) {
				t.Errorf("after the moves, %+v: %v, want %v", tc.f, got, tc.want)
			}
		}
		counts, err := s.PartitionCounts(ctx, headgate.QueueDefault, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[headgate.State]int64{headgate.StateAvailable: 2}; !maps.Equal(counts, want) {
			t.Errorf("counts of t1 = %v, want %v", counts, want)
		}
		// Listings of running jobs carry their lease.
		c := admitOne(t, ctx, s)
		page, err := s.ListJobs(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateRunning}, headgate.Page{})
		if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != c.Envelope.ID || page.Jobs[0].LeaseExpiresAt.IsZero() {
			t.Errorf("running listing = %+v, %v; want %s with its lease", page, err, c.Envelope.ID)
		}
	}},
	{"ListJobs/MetaTag", func(t *testing.T, s *headgate.Store) {
		// A meta tag has no index key (the invariant check after the case holds every
		// index to the jobs): ListJobs finds its jobs by checking each of the kind index's.
		ctx := freeze(t, s)
		mk := func(id string, tags ...string) headgate.Envelope {
			e := job(id)
			e.Tags = tags
			return e
		}
		mustEnqueue(t, ctx, s, mk("m1", "_tp=a", "red"), mk("m2", "_tp=b"), mk("m3", "_tp=a"), mk("m4", "red"))
		for _, tc := range []struct {
			tag, part string
			want      []string
		}{{"_tp=a", "", []string{"m1", "m3"}}, {"_tp=b", "", []string{"m2"}}, {"_tp=c", "", nil}, {"red", "", []string{"m1", "m4"}}} {
			f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Tag: tc.tag}
			for _, limit := range []int{1, 50} {
				if got := listIDs(t, ctx, s, f, headgate.Page{Limit: limit, Oldest: true}); !slices.Equal(got, tc.want) {
					t.Errorf("tag %s, pages of %d: %v, want %v", tc.tag, limit, got, tc.want)
				}
			}
		}
		j, err := s.GetJob(ctx, "m1")
		if err != nil || !slices.Equal(j.Tags, []string{"_tp=a", "red"}) {
			t.Errorf("GetJob(m1) tags = %v, %v; want the meta tag kept", j, err)
		}
		keys, err := scanNamespace(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.Contains(k, "\x1ft\x1f_") {
				t.Errorf("meta tag index key %q", k)
			}
		}
		// Admission and ack move the jobs' index entries: a job whose only tag is a
		// meta tag (m2) and one with an ordinary tag too (m1) alike.
		if claims := mustAdmit(t, ctx, s, admitReq("w1", 4)); len(claims) != 4 {
			t.Fatalf("admitted %d jobs, want 4", len(claims))
		} else {
			running := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateRunning}
			for tag, want := range map[string][]string{"red": {"m1", "m4"}, "_tp=a": {"m1", "m3"}, "_tp=b": {"m2"}} {
				running.Tag = tag
				if got := listIDs(t, ctx, s, running, headgate.Page{Oldest: true}); !slices.Equal(got, want) {
					t.Errorf("running, tag %s: %v, want %v", tag, got, want)
				}
			}
			ackAllSuccess(t, ctx, s, claims)
		}
	}},
	{"ListJobs/Held", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		poison, sib := job("poison"), job("sibling")
		poison.Fingerprint, sib.Fingerprint = "fp", "fp"
		sib.PartitionKey = "t1"
		sib.ScheduledAt = epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, poison, sib)
		quarantineJob(t, ctx, s, "poison")
		advance(t, ctx, s, time.Hour)
		mustPromote(t, ctx, s)
		held := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateHeld, Fingerprint: "fp"}
		if got := listIDs(t, ctx, s, held, headgate.Page{}); !slices.Equal(got, []string{"sibling"}) {
			t.Errorf("held = %v, want [sibling]", got)
		}
		q := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateQuarantined}
		if got := listIDs(t, ctx, s, q, headgate.Page{}); !slices.Equal(got, []string{"poison"}) {
			t.Errorf("quarantined = %v, want [poison]", got)
		}
		counts, err := s.PartitionCounts(ctx, headgate.QueueDefault, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[headgate.State]int64{headgate.StateHeld: 1}; !maps.Equal(counts, want) {
			t.Errorf("counts of t1 = %v, want %v", counts, want)
		}
		if _, err := s.ReleaseQuarantine(ctx, "fp"); err != nil {
			t.Fatal(err)
		}
		avail := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t1"}
		if got := listIDs(t, ctx, s, avail, headgate.Page{}); !slices.Equal(got, []string{"sibling"}) {
			t.Errorf("after the release, available in t1 = %v, want [sibling]", got)
		}
	}},
	{"ListJobs/PagingWhileJobsMove", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const n = 10_000
		var batch []headgate.Envelope
		for i := range n {
			e := job(fmt.Sprintf("j%05d", i))
			if i%3 == 0 {
				e.Kind = "k:other"
			}
			batch = append(batch, e)
			if len(batch) == 1000 {
				mustEnqueue(t, ctx, s, batch...)
				batch = nil
				advance(t, ctx, s, time.Millisecond) // times tie inside a batch, differ between
			}
		}
		left := map[string]bool{} // jobs cancelled while a listing ran
		for _, oldest := range []bool{true, false} {
			f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}
			p := headgate.Page{Limit: 331, Oldest: oldest}
			seen := map[string]int{}
			for step := 1; ; step++ {
				page, err := s.ListJobs(ctx, f, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range page.Jobs {
					seen[j.ID]++
				}
				if page.Next == "" {
					break
				}
				p.Cursor = page.Next
				// Between pages, jobs move: some ahead of the cursor and some behind it are
				// cancelled, and new jobs arrive.
				for _, k := range []int{(step * 7919) % n, (step * 104729) % n} {
					id := fmt.Sprintf("j%05d", k)
					if !left[id] {
						left[id] = true
						if err := s.Cancel(ctx, id); err != nil {
							t.Fatal(err)
						}
					}
				}
				advance(t, ctx, s, time.Millisecond)
				mustEnqueue(t, ctx, s, job(fmt.Sprintf("new-%v-%d", oldest, step)))
			}
			for i := range n {
				id := fmt.Sprintf("j%05d", i)
				if c := seen[id]; c > 1 || (!left[id] && c != 1) {
					t.Errorf("oldest=%v: %s (cancelled meanwhile: %v) was listed %d times", oldest, id, left[id], c)
				}
			}
		}
	}},
	{"ListJobs/Refusals", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"))
		var inv *headgate.InvalidError
		for _, tc := range []struct {
			field string
			f     headgate.JobFilter
			p     headgate.Page
		}{
			{"Queue", headgate.JobFilter{State: headgate.StateAvailable}, headgate.Page{}},
			{"State", headgate.JobFilter{Queue: headgate.QueueDefault, State: "bogus"}, headgate.Page{}},
			{"Limit", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, headgate.Page{Limit: 1001}},
			{"Cursor", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, headgate.Page{Cursor: "x"}},
			{"OlderThan", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, OlderThan: -time.Second},
				headgate.Page{}},
		} {
			if _, err := s.ListJobs(ctx, tc.f, tc.p); !errors.As(err, &inv) || inv.Field != tc.field {
				t.Errorf("ListJobs(%+v, %+v): %v, want *InvalidError for %s", tc.f, tc.p, err, tc.field)
			}
		}
		// A cursor of one order is refused in the other.
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}
		mustEnqueue(t, ctx, s, job("b"))
		page, err := s.ListJobs(ctx, f, headgate.Page{Limit: 1})
		if err != nil || page.Next == "" {
			t.Fatalf("first page: %+v, %v", page, err)
		}
		if _, err := s.ListJobs(ctx, f, headgate.Page{Limit: 1, Oldest: true, Cursor: page.Next}); !errors.As(err, &inv) || inv.Field != "Cursor" {
			t.Errorf("a newest-first cursor oldest first: %v, want *InvalidError for Cursor", err)
		}
		// A cursor of another filter is refused: its position would skip this filter's
		// jobs before it.
		err = unchanged(t, ctx, s, "ListJobs with a cursor of another filter", func() error {
			_, err := s.ListJobs(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Kind: "test"},
				headgate.Page{Limit: 1, Cursor: page.Next})
			return err
		})
		if !errors.As(err, new(*headgate.CursorFilterError)) || !errors.As(err, &inv) || inv.Field != "Cursor" {
			t.Errorf("a cursor of another filter: %v, want *CursorFilterError, an *InvalidError for Cursor", err)
		}
		// An index of the wrong type is reported, not skipped.
		key := nsKey(s, "q:default:ix:available:test:job")
		if err := s.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().Set(ctx, key, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var ce *headgate.CorruptError
		if _, err := s.ListJobs(ctx, f, headgate.Page{}); !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("ListJobs over a corrupt index: %v, want *CorruptError for %s", err, key)
		}
		if err := s.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			if _, err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

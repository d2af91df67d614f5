package rqueuetest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// enqueueMany enqueues n jobs id prefix-00000.. in batches of 1,000, each changed by edit.
func enqueueMany(t testing.TB, ctx context.Context, s *headgate.Store, prefix string, n int, edit func(i int, e *headgate.Envelope)) {
	t.Helper()
	var batch []headgate.Envelope
	for i := range n {
		e := job(fmt.Sprintf("%s-%05d", prefix, i))
		if edit != nil {
			edit(i, &e)
		}
		batch = append(batch, e)
		if len(batch) == 1000 || i == n-1 {
			mustEnqueue(t, ctx, s, batch...)
			batch = nil
		}
	}
}

// countIn is the number of the queue's jobs in state that match f's other fields.
func countIn(t testing.TB, ctx context.Context, s *headgate.Store, f headgate.JobFilter) int {
	t.Helper()
	return len(listIDs(t, ctx, s, f, headgate.Page{Limit: headgate.ListLimitMax, Oldest: true}))
}

// oldFormatCursor rewrites a cursor of ListJobs or of a bulk verb into the format before
// cursors carried their filter's digest: the prefix in lower case, the 8 hex digits of
// the digest gone.
func oldFormatCursor(t testing.TB, c string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 9 || !strings.ContainsRune("ABD", rune(raw[0])) {
		t.Fatalf("cursor %q (%q, %v) is not of the current format", c, raw, err)
	}
	return base64.RawURLEncoding.EncodeToString(append([]byte{raw[0] + 'a' - 'A'}, raw[9:]...))
}

// otherFilters are f with each of its fields changed in turn: a cursor made for f is
// refused with every one of them.
func otherFilters(f headgate.JobFilter, otherState headgate.State) []headgate.JobFilter {
	var out []headgate.JobFilter
	for _, edit := range []func(*headgate.JobFilter){
		func(g *headgate.JobFilter) { g.Queue = "other" },
		func(g *headgate.JobFilter) { g.State = otherState },
		func(g *headgate.JobFilter) { g.Kind = "k:other" },
		func(g *headgate.JobFilter) { g.Partition = "other" },
		func(g *headgate.JobFilter) { g.Tag = "other" },
		func(g *headgate.JobFilter) { g.Fingerprint = "other" },
		func(g *headgate.JobFilter) { g.OlderThan = time.Hour },
	} {
		g := f
		edit(&g)
		out = append(out, g)
	}
	return out
}

// bulkCancelCases cover BulkCancel: batches, dry runs, resuming, refusals.
var bulkCancelCases = []conformanceCase{
	{"BulkCancel/ByPartition", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "t1", 2500, func(i int, e *headgate.Envelope) { e.PartitionKey = "t1" })
		enqueueMany(t, ctx, s, "t2", 10, func(i int, e *headgate.Envelope) { e.PartitionKey = "t2" })
		running := admitOne(t, ctx, s) // a running job of t1 or t2 is cancelled as any other
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t1"}
		var progress []headgate.BulkProgress
		res, err := s.BulkCancel(ctx, f, &headgate.BulkOptions{Progress: func(p headgate.BulkProgress) {
			progress = append(progress, p)
		}})
		want := 2500
		if running.Envelope.PartitionKey == "t1" {
			want--
		}
		if err != nil || res.Moved != int64(want) || res.Skipped != 0 || res.Batches != 3 || res.Cursor != "" {
			t.Fatalf("BulkCancel = %+v, %v; want %d cancelled in 3 batches", res, err, want)
		}
		if len(progress) != 3 || progress[0].Moved != 1000 || progress[0].Cursor == "" || progress[2] != res {
			t.Errorf("progress = %+v", progress)
		}
		f.State = headgate.StateCancelled
		if n := countIn(t, ctx, s, f); n != want {
			t.Errorf("%d cancelled jobs of t1, want %d", n, want)
		}
		f.State, f.Partition = headgate.StateAvailable, "t2"
		if n := countIn(t, ctx, s, f); n < 9 {
			t.Errorf("%d available jobs of t2 left, want them all", n)
		}
		// The running job: cancelled by its state, and its holder's ack is refused.
		rf := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateRunning}
		if res, err := s.BulkCancel(ctx, rf, nil); err != nil || res.Moved != 1 {
			t.Fatalf("BulkCancel of running = %+v, %v", res, err)
		}
		if _, err := s.Ack(ctx, running.LeaseRef(), headgate.OutcomeSuccess, nil); !errors.As(err, new(*headgate.LeaseRejectedError)) {
			t.Errorf("ack of a cancelled running job: %v, want LeaseRejected", err)
		}
	}},
	{"BulkCancel/DryRunWritesNothing", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 1500, func(i int, e *headgate.Envelope) {
			if i%2 == 0 {
				e.Kind = "k:even"
			}
		})
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Kind: "k:even"}
		writesNothing(t, ctx, s, "a dry run", func() {
			res, err := s.BulkCancel(ctx, f, &headgate.BulkOptions{DryRun: true, BatchSize: 400})
			if err != nil || res.Moved != 750 || res.Batches != 2 {
				t.Errorf("dry run = %+v, %v; want 750 counted in 2 batches", res, err)
			}
		})
	}},
	{"BulkCancel/Resume", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "j", 350, nil)
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}
		stop, cancel := context.WithCancel(ctx)
		res, err := s.BulkCancel(stop, f, &headgate.BulkOptions{BatchSize: 100, Progress: func(headgate.BulkProgress) { cancel() }})
		if !errors.Is(err, context.Canceled) || res.Moved != 100 || res.Cursor == "" {
			t.Fatalf("interrupted run = %+v, %v; want 100 cancelled and a cursor", res, err)
		}
		// Jobs that arrive after the run started are not part of it.
		advance(t, ctx, s, time.Second)
		mustEnqueue(t, ctx, s, job("late"))
		rest, err := s.BulkCancel(ctx, f, &headgate.BulkOptions{BatchSize: 100, Cursor: res.Cursor})
		if err != nil || rest.Moved != 250 || rest.Cursor != "" {
			t.Fatalf("resumed run = %+v, %v; want the other 250", rest, err)
		}
		wantState(t, ctx, s, "late", headgate.StateAvailable)
		if n := countIn(t, ctx, s, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}); n != 350 {
			t.Errorf("%d cancelled, want 350", n)
		}
	}},
	{"BulkCancel/CursorOfAnotherFilter", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		enqueueMany(t, ctx, s, "t1", 300, func(i int, e *headgate.Envelope) { e.PartitionKey = "t1" })
		enqueueMany(t, ctx, s, "t2", 300, func(i int, e *headgate.Envelope) { e.PartitionKey = "t2" })
		f := headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable, Partition: "t1"}
		interrupted := func(f headgate.JobFilter) string {
			t.Helper()
			stop, cancel := context.WithCancel(ctx)
			defer cancel()
			res, err := s.BulkCancel(stop, f, &headgate.BulkOptions{BatchSize: 100, Progress: func(headgate.BulkProgress) { cancel() }})
			if !errors.Is(err, context.Canceled) || res.Moved != 100 || res.Cursor == "" {
				t.Fatalf("interrupted run of %+v = %+v, %v; want 100 cancelled and a cursor", f, res, err)
			}
			return res.Cursor
		}
		cursor := interrupted(f)
		// Taken for t2's, t1's position would skip t2's jobs before it: refused, whatever
		// field differs, dry run or not.
		for _, g := range otherFilters(f, headgate.StateScheduled) {
			for _, dry := range []bool{false, true} {
				err := unchanged(t, ctx, s, fmt.Sprintf("BulkCancel(%+v) with a cursor of %+v", g, f), func() error {
					_, err := s.BulkCancel(ctx, g, &headgate.BulkOptions{BatchSize: 100, Cursor: cursor, DryRun: dry})
					return err
				})
				var cf *headgate.CursorFilterError
				var inv *headgate.InvalidError
				if !errors.As(err, &cf) || cf.Filter != g || !errors.As(err, &inv) || inv.Field != "Cursor" {
					t.Errorf("BulkCancel(%+v) with a cursor of %+v: %v, want *CursorFilterError, an *InvalidError for Cursor", g, f, err)
				}
			}
		}
		// With its own filter the cursor resumes as before.
		rest, err := s.BulkCancel(ctx, f, &headgate.BulkOptions{BatchSize: 100, Cursor: cursor})
		if err != nil || rest.Moved != 200 || rest.Cursor != "" {
			t.Fatalf("resumed run = %+v, %v; want the other 200 of t1", rest, err)
		}
		// A cursor of the format before the digest (a run interrupted before an upgrade)
		// still resumes.
		f.Partition = "t2"
		old := oldFormatCursor(t, interrupted(f))
		rest, err = s.BulkCancel(ctx, f, &headgate.BulkOptions{BatchSize: 100, Cursor: old})
		if err != nil || rest.Moved != 200 || rest.Cursor != "" {
			t.Fatalf("run resumed from an old-format cursor = %+v, %v; want the other 200 of t2", rest, err)
		}
		if n := countIn(t, ctx, s, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateCancelled}); n != 600 {
			t.Errorf("%d cancelled, want 600", n)
		}
	}},
	{"BulkCancel/Refusals", func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		mustEnqueue(t, ctx, s, job("a"), job("b"))
		finishAs(t, ctx, s, "a", headgate.OutcomeSkip)
		var inv *headgate.InvalidError
		for _, tc := range []struct {
			field string
			f     headgate.JobFilter
			o     *headgate.BulkOptions
		}{
			{"State", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateArchived}, nil},
			{"Queue", headgate.JobFilter{State: headgate.StateAvailable}, nil},
			{"BatchSize", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, &headgate.BulkOptions{BatchSize: 1001}},
			{"Cursor", headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, &headgate.BulkOptions{Cursor: "nope"}},
		} {
			err := unchanged(t, ctx, s, "BulkCancel "+tc.field, func() error {
				_, err := s.BulkCancel(ctx, tc.f, tc.o)
				return err
			})
			if !errors.As(err, &inv) || inv.Field != tc.field {
				t.Errorf("BulkCancel(%+v): %v, want *InvalidError for %s", tc.f, err, tc.field)
			}
		}
		// A structure the batch writes is corrupt: the whole batch is refused.
		key := nsKey(s, "retained")
		if err := s.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().Set(ctx, key, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := unchanged(t, ctx, s, "BulkCancel over a corrupt retained index", func() error {
			_, err := s.BulkCancel(ctx, headgate.JobFilter{Queue: headgate.QueueDefault, State: headgate.StateAvailable}, nil)
			return err
		})
		var ce *headgate.CorruptError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("BulkCancel over a corrupt index: %v, want *CorruptError for %s", err, key)
		}
		if err := s.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}},
}

package rqueuetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// recordingTB is a real test's TB whose Errorf and Fatalf are recorded instead of failing
// it, so the corruption harness's own verdicts can be checked.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format) // the verdict, without the case's details
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(errFailNow)
}

func runRecorded(t *testing.T, fn func(tb testing.TB)) *recordingTB {
	r := &recordingTB{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != errFailNow {
				panic(p)
			}
		}()
		fn(r)
	}()
	return r
}

// TestCorruptionHarness holds the harness to its verdicts: a call that reads everything
// before it writes passes every corruption; one that writes, then reads a corrupted key and
// fails, is reported as having written before failing.
func TestCorruptionHarness(t *testing.T) {
	setup := func(t testing.TB, ctx context.Context, s *headgate.Store) {
		a, b := job("a"), job("b")
		a.ScheduledAt, b.ScheduledAt = epoch.Add(time.Hour), epoch.Add(time.Hour)
		mustEnqueue(t, ctx, s, a, b)
	}
	prefix := func(s *headgate.Store) string { return nsKey(s, "") }
	readsFirst := func(ctx context.Context, s *headgate.Store) error {
		for _, id := range []string{"a", "b"} {
			if err := s.Client().HGetAll(ctx, prefix(s)+"job:"+id).Err(); err != nil {
				return err
			}
		}
		return s.Client().Set(ctx, prefix(s)+"marker", "1", 0).Err()
	}
	writesFirst := func(ctx context.Context, s *headgate.Store) error {
		if err := s.Client().Set(ctx, prefix(s)+"marker", "1", 0).Err(); err != nil {
			return err
		}
		return s.Client().HGetAll(ctx, prefix(s)+"job:b").Err()
	}
	check := func(call func(context.Context, *headgate.Store) error) corruptCheck {
		return corruptCheck{setup: setup, keys: keysNamed("job:"), call: call}
	}
	halfMoves := func(ctx context.Context, s *headgate.Store) error {
		return s.Client().ZRem(ctx, prefix(s)+"scheduled", "a").Err()
	}
	s := NewMiniredisStore(t)
	if r := runRecorded(t, func(tb testing.TB) { assertCorruptionSafe(tb, s, check(readsFirst)) }); len(r.errors) != 0 {
		t.Errorf("a call that reads first was reported: %q", r.errors)
	}
	r := runRecorded(t, func(tb testing.TB) { assertCorruptionSafe(tb, s, check(writesFirst)) })
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "call failed with %v after writing") {
		t.Errorf("a call that writes first: reported %q, want one write-before-failure", r.errors)
	}
	r = runRecorded(t, func(tb testing.TB) { assertCorruptionSafe(tb, s, check(halfMoves)) })
	if len(r.errors) == 0 || !strings.Contains(r.errors[0], "half-moved") {
		t.Errorf("a call that leaves a scheduled job out of its index: reported %q, want half-moved", r.errors)
	}
}

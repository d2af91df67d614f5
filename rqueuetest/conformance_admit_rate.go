package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// admitRateCases: a job whose rate class lacks its weight never blocks the admissible
// jobs behind it in its partition (the reference judges every candidate on its own); it
// is parked, and comes back when its class can pay.
var admitRateCases = []conformanceCase{
	{"Admit/Rate/LightBehindHeavierThanBurst", rateLightBehindHeavy},
	{"Admit/Rate/FreeBehindEmptyClassInPartition", rateFreeBehindEmpty},
	{"Admit/Rate/ParkedReturnOnRefillInRankOrder", rateParkedReturnOnRefill},
	{"Admit/Rate/UnrunnableUntilBurstGrows", rateUnrunnableUntilBurstGrows},
	{"Admit/Rate/ParkedJobsCancelAndReplace", rateParkedCancelReplace},
	{"Admit/Rate/ManyParkedAheadBounded", rateManyParkedAhead},
}

func rated(id, part, class string, prio int32, weight int) headgate.Envelope {
	e := job(id)
	e.PartitionKey, e.RateClass, e.Priority, e.Weight = part, class, prio, weight
	return e
}

// spendClass empties a rate class's bucket from a queue of its own (classes are fleet-wide).
func spendClass(t testing.TB, ctx context.Context, s *headgate.Store, class string, weight int) {
	t.Helper()
	e := rated("spend-"+class, "", class, 0, weight)
	e.Queue = "spend"
	mustEnqueue(t, ctx, s, e)
	if got := ids(mustAdmit(t, ctx, s, admitQ("w", 1, weight, "spend"))); !slices.Equal(got, []string{e.ID}) {
		t.Fatalf("spending class %s: admitted %v, want [%s]", class, got, e.ID)
	}
}

// rateLightBehindHeavy: class rc {10 per second, burst 3}; partition t holds heavy
// (weight 5, priority 9) and light (weight 1). The reference admits light on the first
// call; heavy can never run at this burst and is counted unrunnable, not waiting silently.
func rateLightBehindHeavy(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "rc", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 3}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, ctx, s, rated("heavy", "t", "rc", 9, 5), rated("light", "t", "rc", 0, 1))
	var got []string
	for call := range 11 {
		claims := mustAdmit(t, ctx, s, admitReq("w", 5))
		if call == 0 && !slices.Equal(ids(claims), []string{"light"}) {
			t.Errorf("first call admitted %v, want [light]", ids(claims))
		}
		got = append(got, ids(claims)...)
		advance(t, ctx, s, time.Hour)
	}
	if !slices.Equal(got, []string{"light"}) {
		t.Errorf("11 hourly calls admitted %v, want [light] (heavy outweighs the burst)", got)
	}
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 1 || st.Counts[headgate.StateAvailable] != 1 {
		t.Errorf("stats: unrunnable %d available %d, want 1 and 1 (heavy)", st.Unrunnable, st.Counts[headgate.StateAvailable])
	}
}

// rateFreeBehindEmpty: class slow {limit 0, burst 1}, its token spent; partition t holds
// hi-slow (priority 10) and mid-free (no class, priority 5). The reference admits
// mid-free; so does every later call with nothing more, and hi-slow stays available.
func rateFreeBehindEmpty(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "slow", headgate.RateLimit{Limit: 0, Window: time.Second, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	spendClass(t, ctx, s, "slow", 1)
	mustEnqueue(t, ctx, s, rated("hi-slow", "t", "slow", 10, 1), rated("mid-free", "t", "", 5, 1))
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, []string{"mid-free"}) {
		t.Errorf("admitted %v, want [mid-free]", got)
	}
	for range 3 {
		advance(t, ctx, s, time.Hour)
		if got := mustAdmit(t, ctx, s, admitReq("w", 5)); len(got) != 0 {
			t.Errorf("admitted %v from a class that never refills", ids(got))
		}
	}
	wantState(t, ctx, s, "hi-slow", headgate.StateAvailable)
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 0 || st.Counts[headgate.StateAvailable] != 1 {
		t.Errorf("stats: unrunnable %d available %d, want 0 and 1 (hi-slow waits for tokens)", st.Unrunnable, st.Counts[headgate.StateAvailable])
	}
}

// rateParkedReturnOnRefill: jobs parked by an empty class return to their partition
// when the bucket refills, in rank order, no sooner; free jobs behind them go meanwhile;
// RemoveRateLimit returns the rest at once.
func rateParkedReturnOnRefill(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	spendClass(t, ctx, s, "slow", 1)
	var jobs []headgate.Envelope
	for i := range 3 {
		jobs = append(jobs, rated(fmt.Sprint("slow-", i), "t", "slow", 9, 1))
	}
	for i := range 3 {
		jobs = append(jobs, rated(fmt.Sprint("free-", i), "t", "", 0, 1))
	}
	mustEnqueue(t, ctx, s, jobs...)
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 10))); !slices.Equal(got, []string{"free-0", "free-1", "free-2"}) {
		t.Errorf("admitted %v with the class empty, want the free jobs behind the slow ones", got)
	}
	advance(t, ctx, s, time.Hour-time.Millisecond)
	if got := mustAdmit(t, ctx, s, admitReq("w", 10)); len(got) != 0 {
		t.Errorf("admitted %v before a token refilled", ids(got))
	}
	advance(t, ctx, s, time.Millisecond)
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 10))); !slices.Equal(got, []string{"slow-0"}) {
		t.Errorf("admitted %v once one token refilled, want [slow-0]", got)
	}
	// A job enqueued behind parked ones is not blocked by them either.
	mustEnqueue(t, ctx, s, rated("late-free", "t", "", 0, 1))
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 10))); !slices.Equal(got, []string{"late-free"}) {
		t.Errorf("admitted %v, want [late-free]", got)
	}
	if err := s.RemoveRateLimit(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 10))); !slices.Equal(got, []string{"slow-1", "slow-2"}) {
		t.Errorf("admitted %v after RemoveRateLimit, want [slow-1 slow-2]", got)
	}
}

// rateUnrunnableUntilBurstGrows: a job heavier than its class's burst is counted
// unrunnable and blocks no one; SetRateLimit with a larger burst makes it admissible.
func rateUnrunnableUntilBurstGrows(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "big", headgate.RateLimit{Limit: 100, Window: time.Second, Burst: 4}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, ctx, s, rated("huge", "t", "big", 9, 8), rated("small", "t", "big", 0, 2))
	req := admitQ("w", 10, 8)
	if got := ids(mustAdmit(t, ctx, s, req)); !slices.Equal(got, []string{"small"}) {
		t.Errorf("admitted %v, want [small]", got)
	}
	advance(t, ctx, s, time.Minute)
	if got := mustAdmit(t, ctx, s, req); len(got) != 0 {
		t.Errorf("admitted %v: weight 8 over a burst of 4", ids(got))
	}
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 1 {
		t.Errorf("unrunnable %d, want 1", st.Unrunnable)
	}
	if err := s.SetRateLimit(ctx, "big", headgate.RateLimit{Limit: 100, Window: time.Second, Burst: 8}); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, req)); !slices.Equal(got, []string{"huge"}) {
		t.Errorf("admitted %v after the burst grew to 8, want [huge]", got)
	}
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 0 {
		t.Errorf("unrunnable %d after admission, want 0", st.Unrunnable)
	}
}

// rateParkedCancelReplace: a parked job can be cancelled, and replaced by a duplicate
// enqueue (new priority): it leaves the parking, counts stay exact, and the replaced job
// is filed again like a new one.
func rateParkedCancelReplace(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "big", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	spendClass(t, ctx, s, "big", 2)
	a, b := rated("a", "t", "big", 5, 1), rated("b", "t", "big", 5, 3)
	b.UniqueKey = "b"
	mustEnqueue(t, ctx, s, a, b, rated("c", "t", "big", 5, 1))
	if got := mustAdmit(t, ctx, s, admitQ("w", 10, 4)); len(got) != 0 {
		t.Fatalf("admitted %v from an empty class", ids(got))
	}
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 1 || st.Counts[headgate.StateAvailable] != 3 {
		t.Errorf("stats: unrunnable %d available %d, want 1 (b) and 3", st.Unrunnable, st.Counts[headgate.StateAvailable])
	}
	if err := s.Cancel(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, ctx, s, "a", headgate.StateCancelled)
	// Replace b's priority: b leaves the parking and is judged again.
	dup := rated("b2", "t", "big", 7, 3)
	dup.UniqueKey, dup.UniqueReplace = "b", headgate.ReplacePriority
	_, err := s.Enqueue(ctx, dup)
	wantErr[*headgate.DuplicateError](t, err)
	if j := getJob(t, ctx, s, "b"); j.Priority != 7 || j.State != headgate.StateAvailable {
		t.Errorf("b after the replace: priority %d state %s, want 7 available", j.Priority, j.State)
	}
	if err := s.RemoveRateLimit(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitQ("w", 10, 4))); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("admitted %v with the class unlimited, want [b c] (a was cancelled)", got)
	}
}

// rateManyParkedAhead: 500 jobs of an empty class ahead of free ones in the same
// partition. A call examines a bounded number of jobs, so parking them takes a few
// calls; the free jobs come out within them, and later calls go straight to the free ones.
func rateManyParkedAhead(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "slow", headgate.RateLimit{Limit: 1, Window: 24 * time.Hour, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	spendClass(t, ctx, s, "slow", 1)
	var jobs []headgate.Envelope
	for i := range 500 {
		jobs = append(jobs, rated(fmt.Sprintf("slow-%03d", i), "t", "slow", 9, 1))
	}
	for i := range 20 {
		jobs = append(jobs, rated(fmt.Sprintf("free-%02d", i), "t", "", 0, 1))
	}
	enqueueChunks(t, ctx, s, jobs, 100)
	var got []string
	for call := 1; call <= 10 && len(got) == 0; call++ {
		got = ids(mustAdmit(t, ctx, s, admitReq("w", 5)))
	}
	if len(got) == 0 || !slices.Equal(got, freeIDs(0, len(got))) {
		t.Fatalf("admitted %v within 10 calls of capacity 5, want free-00 onwards", got)
	}
	next := len(got)
	// Parked, they cost the next call nothing.
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5))); !slices.Equal(got, freeIDs(next, next+5)) {
		t.Errorf("next call admitted %v, want %v", got, freeIDs(next, next+5))
	}
}

func freeIDs(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("free-%02d", i))
	}
	return out
}

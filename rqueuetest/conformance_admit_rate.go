package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// admitRateCases cover rate classes at admission. A job whose rate class lacks its weight
// never blocks the admissible jobs behind it in its partition (the reference judges every
// candidate on its own); it is parked, and comes back when its class can pay. Over time a
// class never admits more than its bucket allows, and an ack's actual weight trues it up.
var admitRateCases = []conformanceCase{
	{"Admit/Rate/LightBehindHeavierThanBurst", rateLightBehindHeavy},
	{"Admit/Rate/FreeBehindEmptyClassInPartition", rateFreeBehindEmpty},
	{"Admit/Rate/ParkedReturnOnRefillInRankOrder", rateParkedReturnOnRefill},
	{"Admit/Rate/UnrunnableUntilBurstGrows", rateUnrunnableUntilBurstGrows},
	{"Admit/Rate/ParkedJobsCancelAndReplace", rateParkedCancelReplace},
	{"Admit/Rate/ManyParkedAheadBounded", rateManyParkedAhead},

	// Rate classes over time and across partitions.
	{"Rate/NeverAboveBucketOverLongRun", rateLongRun},
	{"Rate/EmptyClassOthersAdmitted", rateEmptyClassOthersAdmitted},
	{"Rate/ManyEmptyPartitionsAheadDoNotStarve", rateManyEmptyAhead},
	{"Rate/ActualWeightTrueUp", rateTrueUp},
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
	mustSetRateLimit(t, ctx, s, "rc", headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 3})
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
	mustSetRateLimit(t, ctx, s, "slow", headgate.RateLimit{Limit: 0, Window: time.Second, Burst: 1})
	spendClass(t, ctx, s, "slow", 1)
	mustEnqueue(t, ctx, s, rated("hi-slow", "t", "slow", 10, 1), rated("mid-free", "t", "", 5, 1))
	wantAdmitted(t, ctx, s, admitReq("w", 5), []string{"mid-free"}, "")
	for range 3 {
		advance(t, ctx, s, time.Hour)
		wantAdmitted(t, ctx, s, admitReq("w", 5), nil, " from a class that never refills")
	}
	wantState(t, ctx, s, "hi-slow", headgate.StateAvailable)
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 0 || st.Counts[headgate.StateAvailable] != 1 {
		t.Errorf("stats: unrunnable %d available %d, want 0 and 1 (hi-slow waits for tokens)", st.Unrunnable, st.Counts[headgate.StateAvailable])
	}
}

// wantSlowRefill checks the refill of class slow (one token an hour, spent, with slow-0,
// slow-1 and slow-2 parked): req admits nothing a millisecond before the hour, and
// slow-0 at it.
func wantSlowRefill(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.AdmitRequest) {
	t.Helper()
	advance(t, ctx, s, time.Hour-time.Millisecond)
	wantAdmitted(t, ctx, s, req, nil, " before a token refilled")
	advance(t, ctx, s, time.Millisecond)
	wantAdmitted(t, ctx, s, req, []string{"slow-0"}, " once one token refilled")
}

// wantSlowLifted removes the limit of class slow and checks that req then admits the
// parked slow-1 and slow-2 at once.
func wantSlowLifted(t testing.TB, ctx context.Context, s *headgate.Store, req headgate.AdmitRequest) {
	t.Helper()
	if err := s.RemoveRateLimit(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	wantAdmitted(t, ctx, s, req, []string{"slow-1", "slow-2"}, " after RemoveRateLimit")
}

// rateParkedReturnOnRefill: jobs parked by an empty class return to their partition
// when the bucket refills, in rank order, no sooner; free jobs behind them go meanwhile;
// RemoveRateLimit returns the rest at once.
func rateParkedReturnOnRefill(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
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
	wantSlowRefill(t, ctx, s, admitReq("w", 10))
	// A job enqueued behind parked ones is not blocked by them either.
	mustEnqueue(t, ctx, s, rated("late-free", "t", "", 0, 1))
	wantAdmitted(t, ctx, s, admitReq("w", 10), []string{"late-free"}, "")
	wantSlowLifted(t, ctx, s, admitReq("w", 10))
}

// rateUnrunnableUntilBurstGrows: a job heavier than its class's burst is counted
// unrunnable and blocks no one; SetRateLimit with a larger burst makes it admissible.
func rateUnrunnableUntilBurstGrows(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "big", headgate.RateLimit{Limit: 100, Window: time.Second, Burst: 4})
	mustEnqueue(t, ctx, s, rated("huge", "t", "big", 9, 8), rated("small", "t", "big", 0, 2))
	req := admitQ("w", 10, 8)
	wantAdmitted(t, ctx, s, req, []string{"small"}, "")
	advance(t, ctx, s, time.Minute)
	wantAdmitted(t, ctx, s, req, nil, ": weight 8 over a burst of 4")
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 1 {
		t.Errorf("unrunnable %d, want 1", st.Unrunnable)
	}
	mustSetRateLimit(t, ctx, s, "big", headgate.RateLimit{Limit: 100, Window: time.Second, Burst: 8})
	wantAdmitted(t, ctx, s, req, []string{"huge"}, " after the burst grew to 8")
	if st := queueStat(t, s, headgate.QueueDefault); st.Unrunnable != 0 {
		t.Errorf("unrunnable %d after admission, want 0", st.Unrunnable)
	}
}

// rateParkedCancelReplace: a parked job can be cancelled, and replaced by a duplicate
// enqueue (new priority): it leaves the parking, counts stay exact, and the replaced job
// is filed again like a new one.
func rateParkedCancelReplace(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "big", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 2})
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
	mustCancel(t, ctx, s, "a")
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
	mustSetRateLimit(t, ctx, s, "slow", headgate.RateLimit{Limit: 1, Window: 24 * time.Hour, Burst: 1})
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

// rateLongRun: on a stepped store clock, the admitted weight of a class never exceeds
// burst + limit * elapsed / window, checked after every admit call; and a step long
// enough to refill the heaviest job's weight always admits something.
func rateLongRun(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	rl := headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 15}
	mustSetRateLimit(t, ctx, s, "api", rl)
	const parts, perPart, maxW, calls = 5, 200, 5, 300
	var jobs []headgate.Envelope
	for p := range parts {
		for i := range perPart {
			e := job(fmt.Sprintf("p%d-%04d", p, i))
			e.PartitionKey, e.RateClass, e.Weight, e.Retention = fmt.Sprint("p", p), "api", (i*7+p*3)%maxW+1, 0
			jobs = append(jobs, e)
		}
	}
	mustEnqueue(t, ctx, s, jobs...)

	// Long enough for maxW tokens, even if every refill dropped its remainder.
	refillMax := time.Duration(maxW) * rl.Window / time.Duration(rl.Limit)
	x := uint32(2463534242) // xorshift: deterministic steps of 0..999 ms
	admitted := int64(0)
	elapsed := time.Duration(0)
	for call := range calls {
		step := time.Duration(0)
		if call > 0 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			step = time.Duration(x%1000) * time.Millisecond
			if call%50 == 0 {
				step = 5 * time.Second // past a full bucket
			}
		}
		advance(t, ctx, s, step)
		elapsed += step
		claims := mustAdmit(t, ctx, s, admitQ("w", 16, maxW))
		for _, c := range claims {
			if c.Envelope.RateClass != "api" {
				t.Fatalf("admitted %s of class %q", c.Envelope.ID, c.Envelope.RateClass)
			}
			admitted += int64(c.Envelope.Weight)
		}
		bound := rl.Burst + rl.Limit*elapsed.Milliseconds()/rl.Window.Milliseconds()
		if admitted > bound {
			t.Errorf("call %d at +%v: admitted weight %d > burst + limit*elapsed/window = %d", call, elapsed, admitted, bound)
		}
		if call > 0 && step >= refillMax && len(claims) == 0 {
			t.Errorf("call %d: nothing admitted after a %v step that refilled at least %d tokens", call, step, maxW)
		}
		ackAllSuccess(t, ctx, s, claims)
	}
	t.Logf("admitted weight %d over %v (bound %d)", admitted, elapsed,
		rl.Burst+rl.Limit*elapsed.Milliseconds()/rl.Window.Milliseconds())
}

// rateEmptyClassOthersAdmitted: jobs whose class has no tokens are set aside while the
// other partitions are admitted in the same call; a class without a limit is unlimited;
// tokens refill on the store clock; RemoveRateLimit lifts the limit.
func rateEmptyClassOthersAdmitted(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
	spendClass(t, ctx, s, "slow", 1)

	var jobs []headgate.Envelope
	for i := range 3 { // first in the ring
		e := job(fmt.Sprintf("slow-%d", i))
		e.PartitionKey, e.RateClass = "limited", "slow"
		jobs = append(jobs, e)
	}
	var want []string
	for i := range 3 {
		e := job(fmt.Sprintf("free-%d", i))
		e.PartitionKey = "free"
		jobs = append(jobs, e)
		want = append(want, e.ID)
	}
	for i := range 20 {
		e := job(fmt.Sprintf("unconf-%02d", i))
		e.PartitionKey, e.RateClass = "unconfigured", "never-configured"
		jobs = append(jobs, e)
		want = append(want, e.ID)
	}
	mustEnqueue(t, ctx, s, jobs...)
	got := ids(mustAdmit(t, ctx, s, admitReq("w", 100)))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("admitted %v with the slow class empty, want every job of the other partitions %v", got, want)
	}
	wantAdmitted(t, ctx, s, admitReq("w", 100), nil, " with the slow class empty")
	wantSlowRefill(t, ctx, s, admitReq("w", 100))
	wantSlowLifted(t, ctx, s, admitReq("w", 100))
}

// rateManyEmptyAhead: 200 partitions whose class has no tokens, ahead of one that needs
// none. An admit call examines a bounded number of jobs, so it may not reach the free
// partition in the first call; but the starved jobs are parked as they are met, so a few
// calls of capacity 1 do, and nothing of the empty class is admitted meanwhile.
func rateManyEmptyAhead(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1})
	spendClass(t, ctx, s, "slow", 1)
	var jobs []headgate.Envelope
	for i := range 200 {
		e := job(fmt.Sprintf("lim-%03d", i))
		e.PartitionKey, e.RateClass = e.ID, "slow"
		jobs = append(jobs, e)
	}
	free := job("free")
	free.PartitionKey = "free"
	mustEnqueue(t, ctx, s, append(jobs, free)...)
	const calls = 10
	for call := 1; call <= calls; call++ {
		got := ids(mustAdmit(t, ctx, s, admitReq("w", 1)))
		if len(got) == 0 {
			continue
		}
		if !slices.Equal(got, []string{"free"}) {
			t.Errorf("call %d admitted %v, want [free]", call, got)
		}
		return
	}
	t.Errorf("the free job behind 200 rate-empty partitions was not admitted within %d calls", calls)
}

// rateTrueUp: an ack's actual weight trues up the class, visible at the next admission.
func rateTrueUp(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	mustSetRateLimit(t, ctx, s, "tu", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 10})
	mk := func(id string, weight int) headgate.Envelope {
		e := job(id)
		e.PartitionKey, e.RateClass, e.Weight = id, "tu", weight
		return e
	}
	// Quantum 10: every job fits in one turn, so only tokens decide.
	req := admitQ("w", 10, 10)
	mustEnqueue(t, ctx, s, mk("x", 8))
	claims := mustAdmit(t, ctx, s, req)
	if got := ids(claims); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("admitted %v, want [x] (10 tokens)", got)
	}
	mustEnqueue(t, ctx, s, mk("y", 5))
	wantAdmitted(t, ctx, s, req, nil, " with 2 tokens left")
	two := 2
	mustAck(t, ctx, s, claims[0], headgate.OutcomeSuccess, &headgate.AckOpts{ActualWeight: &two})
	if got := ids(mustAdmit(t, ctx, s, req)); !slices.Equal(got, []string{"y"}) {
		t.Errorf("admitted %v after x reported weight 2 of 8, want [y] (8 tokens)", got)
	}
	// 3 tokens left. An actual weight above the charge takes the difference.
	mustEnqueue(t, ctx, s, mk("z", 1))
	claims = mustAdmit(t, ctx, s, req)
	if got := ids(claims); !slices.Equal(got, []string{"z"}) {
		t.Fatalf("admitted %v, want [z]", got)
	}
	three := 3
	mustAck(t, ctx, s, claims[0], headgate.OutcomeSuccess, &headgate.AckOpts{ActualWeight: &three})
	mustEnqueue(t, ctx, s, mk("v", 2))
	wantAdmitted(t, ctx, s, req, nil, ": z reported weight 3 of 1, leaving 0 tokens, not 2")
}

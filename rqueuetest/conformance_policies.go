package rqueuetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
)

// policyCases cover the enqueue and admission policies.
var policyCases = []conformanceCase{
	// Uniqueness (conformance_unique.go).
	{"Unique/Matrix", uniqueMatrix},
	{"Unique/ScopeIsQueueAndKind", uniqueScope},
	{"Unique/BatchWithDuplicateWritesNothing", uniqueBatch},
	{"Unique/ReplacedFingerprintOfHeldHolderDecides", uniqueReplaceFingerprintOfHeldHolder},

	// Fairness across partitions.
	{"Admit/Fairness/QuietBehindNoisyCapacity1", quietBehindNoisy(1)},
	{"Admit/Fairness/QuietBehindNoisyCapacity10", quietBehindNoisy(10)},
	{"Admit/Fairness/OwnPinnedBacklogCapacity1", ownPinnedBacklog(1)},
	{"Admit/Fairness/OwnPinnedBacklogCapacity10", ownPinnedBacklog(10)},
	{"Admit/WeightedDRR/EqualWeightWithinQuantumCapacity10", weightedDRR(10)},
	{"Admit/WeightedDRR/EqualWeightWithinQuantumCapacity7", weightedDRR(7)},
	{"Admit/WeightedDRR/HeavierThanQuantumCarriesCredit", heavierThanQuantum},
	{"Admit/QuantumDefaultsToOne", quantumDefault},
	{"Admit/PauseResumeWithPinnedWork", pauseResumePinned},

	// Rate classes.
	{"Rate/NeverAboveBucketOverLongRun", rateLongRun},
	{"Rate/EmptyClassOthersAdmitted", rateEmptyClassOthersAdmitted},
	{"Rate/ManyEmptyPartitionsAheadDoNotStarve", rateManyEmptyAhead},
	{"Rate/ActualWeightTrueUp", rateTrueUp},
}

func admitQ(worker string, capacity, quantum int, queues ...string) headgate.AdmitRequest {
	r := admitReq(worker, capacity, queues...)
	r.Quantum = quantum
	return r
}

func ackAllSuccess(t *testing.T, ctx context.Context, s *headgate.Store, claims []headgate.Claim) {
	t.Helper()
	if len(claims) == 0 {
		return
	}
	acks := make([]headgate.AckRequest, len(claims))
	for i, c := range claims {
		acks[i] = headgate.AckRequest{Lease: c.LeaseRef(), Outcome: headgate.OutcomeSuccess}
	}
	res, err := s.AckMany(ctx, acks)
	if err != nil {
		t.Fatalf("ack many: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("ack %s: %v", claims[i].Envelope.ID, r.Err)
		}
	}
}

func enqueueChunks(t *testing.T, ctx context.Context, s *headgate.Store, jobs []headgate.Envelope, size int) {
	t.Helper()
	for chunk := range slices.Chunk(jobs, size) {
		mustEnqueue(t, ctx, s, chunk...)
	}
}

// quietBehindNoisy: a partition with 10,000 available jobs, enqueued first, and 100
// partitions of one job each; admitting `capacity` at a time, every quiet job is among
// the first 101 admissions (one round of the ring).
func quietBehindNoisy(capacity int) func(t *testing.T, s *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const noisy, quiet = 10_000, 100
		jobs := make([]headgate.Envelope, 0, noisy)
		for i := range noisy {
			e := job(fmt.Sprintf("noisy-%05d", i))
			e.PartitionKey = "noisy"
			jobs = append(jobs, e)
		}
		enqueueChunks(t, ctx, s, jobs, 1000)
		jobs = jobs[:0]
		for i := range quiet {
			e := job(fmt.Sprintf("quiet-%03d", i))
			e.PartitionKey = e.ID
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)

		admitted, quietSeen, last := 0, 0, 0
		for admitted < quiet+1 {
			claims := mustAdmit(t, ctx, s, admitReq("w", capacity))
			if len(claims) == 0 {
				t.Fatalf("admission stalled after %d jobs", admitted)
			}
			for _, c := range claims {
				admitted++
				if admitted <= quiet+1 && strings.HasPrefix(c.Envelope.ID, "quiet-") {
					quietSeen++
					last = admitted
				}
			}
		}
		if quietSeen != quiet {
			t.Errorf("capacity %d: %d of %d quiet jobs among the first %d admissions (last at %d); want all",
				capacity, quietSeen, quiet, quiet+1, last)
		}
	}
}

// ownPinnedBacklog: work pinned to the caller takes turns with the shared work it may
// also admit. Candidates of one worker are grouped by partition and the partitions take
// turns, so a backlog of 500 jobs pinned to w1 in one partition does not keep 5 shared
// partitions of one job each from w1: they are all among its first 10 admissions (one
// turn each, even when pinned work gets a turn between every two of them).
func ownPinnedBacklog(capacity int) func(t *testing.T, s *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		var jobs []headgate.Envelope
		for i := range 500 {
			e := job(fmt.Sprintf("pinned-%03d", i))
			e.PartitionKey, e.StickyWorker = "pinned", "w1"
			jobs = append(jobs, e)
		}
		const shared = 5
		for i := range shared {
			e := job(fmt.Sprintf("shared-%d", i))
			e.PartitionKey = e.ID
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
		var order []string
		for len(order) < 2*shared {
			claims := mustAdmit(t, ctx, s, admitReq("w1", capacity))
			if len(claims) == 0 {
				t.Fatalf("admission stalled after %v", order)
			}
			order = append(order, ids(claims)...)
		}
		seen := 0
		for _, id := range order[:2*shared] {
			if strings.HasPrefix(id, "shared-") {
				seen++
			}
		}
		if seen != shared {
			t.Errorf("capacity %d: %d of %d shared jobs among w1's first %d admissions %v; want all",
				capacity, seen, shared, 2*shared, order[:2*shared])
		}
	}
}

// weightedDRR: partition a's jobs weigh 4, b's weigh 1, quantum 4, `capacity` jobs per
// admit call, every claim acked at once; over 1,000 admissions each partition gets the
// same admitted weight within one quantum.
//
// Bounds checked. Let deficit_p be the credit a backlogged partition carries out of a turn:
// 0 <= deficit_p <= maxW-1 (it stops when its next job is heavier than what is left).
// After k full turns a partition was admitted k*Q - deficit_p. So:
//   - wherever both partitions completed the same number of turns,
//     |wA - wB| <= maxW-1 <= Q (the criterion: equal within one quantum);
//   - after any call, a partition may be one (possibly partial) turn ahead, and a turn
//     spends at most Q plus the carried credit: |wA - wB| <= Q + maxW - 1. A turn cut by
//     the capacity continues on the next call, which is why this is the bound between calls.
//
// A turn is a maximal run of consecutive admissions of one partition in the sequence
// of all claims, across calls (every turn here admits at least one job, as no job is
// heavier than the quantum). The total, 1,000, is a whole number of rounds (1 job of a
// and 4 of b each), so the end is checked against Q too.
func weightedDRR(capacity int) func(t *testing.T, s *headgate.Store) {
	return func(t *testing.T, s *headgate.Store) {
		ctx := freeze(t, s)
		const (
			quantum = 4
			weightA = 4
			weightB = 1
			maxW    = 4
			total   = 1000
		)
		var jobs []headgate.Envelope
		for i := range 300 {
			e := job(fmt.Sprintf("a-%04d", i))
			e.PartitionKey, e.Weight, e.Retention = "a", weightA, 0
			jobs = append(jobs, e)
		}
		for i := range 1200 {
			e := job(fmt.Sprintf("b-%04d", i))
			e.PartitionKey, e.Weight, e.Retention = "b", weightB, 0
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)

		sum := map[string]int{}
		turns := map[string]int{}
		prev := ""
		diff := func() int {
			d := sum["a"] - sum["b"]
			if d < 0 {
				d = -d
			}
			return d
		}
		for n, call := 0, 1; n < total; call++ {
			claims := mustAdmit(t, ctx, s, admitQ("w", min(capacity, total-n), quantum))
			if len(claims) == 0 {
				t.Fatalf("admission stalled after %d jobs", n)
			}
			for _, c := range claims {
				p := c.Envelope.PartitionKey
				if p != prev {
					if prev != "" {
						turns[prev]++
						if turns["a"] == turns["b"] && diff() > quantum {
							t.Errorf("after %d turns each (admission %d): weight a %d, b %d; want equal within %d",
								turns["a"], n, sum["a"], sum["b"], quantum)
						}
					}
					prev = p
				}
				sum[p] += c.Envelope.Weight
				n++
			}
			if diff() > quantum+maxW-1 {
				t.Errorf("after call %d (%d admitted): weight a %d, b %d; want |a-b| <= %d between calls",
					call, n, sum["a"], sum["b"], quantum+maxW-1)
			}
			ackAllSuccess(t, ctx, s, claims)
		}
		if diff() > quantum {
			t.Errorf("after %d admissions: weight a %d, b %d; want equal within %d", total, sum["a"], sum["b"], quantum)
		}
		if turns["a"] < 199 || turns["b"] < 199 {
			t.Errorf("turns a %d, b %d over %d admissions; want about 200 each", turns["a"], turns["b"], total)
		}
	}
}

// heavierThanQuantum: a job heavier than the quantum banks credit over its partition's
// turns until it can run, inside one admit call and across calls; a partition alone with
// one is admitted too.
func heavierThanQuantum(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	const quantum = 4
	enqueueHeavyAndLight := func(q string) {
		heavy := job(q + "-heavy")
		heavy.Queue, heavy.PartitionKey, heavy.Weight = q, "heavy", 10
		jobs := []headgate.Envelope{heavy}
		for i := range 40 {
			e := job(fmt.Sprintf("%s-light-%02d", q, i))
			e.Queue, e.PartitionKey = q, "light"
			jobs = append(jobs, e)
		}
		mustEnqueue(t, ctx, s, jobs...)
	}
	// The heavy job needs ceil(10/4) = 3 turns of credit, and the light partition gets one
	// turn (4 jobs) between two of them: 8 light jobs run before it, never more than 12.
	for _, v := range []struct {
		queue    string
		capacity int
		calls    int
	}{{"one-call", 20, 1}, {"across-calls", 1, 40}} {
		enqueueHeavyAndLight(v.queue)
		lightBefore, found := 0, false
		for call := 0; call < v.calls && !found; call++ {
			for _, c := range mustAdmit(t, ctx, s, admitQ("w", v.capacity, quantum, v.queue)) {
				if c.Envelope.PartitionKey == "heavy" {
					found = true
					break
				}
				lightBefore++
			}
		}
		if !found {
			t.Errorf("%s: capacity %d, quantum %d: the weight-10 job was not admitted within %d call(s) (%d light jobs were)",
				v.queue, v.capacity, quantum, v.calls, lightBefore)
		} else if lightBefore > 3*quantum {
			t.Errorf("%s: %d light jobs admitted before the heavy one, want at most %d", v.queue, lightBefore, 3*quantum)
		}
	}

	alone := job("alone")
	alone.Queue, alone.Weight = "solo", 50
	mustEnqueue(t, ctx, s, alone)
	found := false
	for call := 0; call < 50 && !found; call++ {
		claims := mustAdmit(t, ctx, s, admitQ("w", 1, 1, "solo"))
		found = len(claims) == 1 && claims[0].Envelope.ID == "alone"
	}
	if !found {
		t.Errorf("a weight-50 job alone in its queue was not admitted with quantum 1 within 50 calls")
	}
}

// partitionsOf is the partition sequence of claims, one letter each: the partition
// key's first byte.
func partitionsOf(claims []headgate.Claim) string {
	var b strings.Builder
	for _, c := range claims {
		b.WriteByte(c.Envelope.PartitionKey[0])
	}
	return b.String()
}

// quantumDefault: Quantum 0 means 1, one job of weight 1 per partition per turn. Which
// partition takes the first turn is the store's choice; the turns are not.
func quantumDefault(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	for _, q := range []string{"q0", "q2"} {
		var jobs []headgate.Envelope
		for _, p := range []string{"a", "b"} {
			for i := 1; i <= 3; i++ {
				e := job(fmt.Sprintf("%s-%s-%d", q, p, i))
				e.Queue, e.PartitionKey = q, p
				jobs = append(jobs, e)
			}
		}
		mustEnqueue(t, ctx, s, jobs...)
	}
	for _, v := range []struct {
		queue   string
		quantum int
		turns   []string // either partition may go first
	}{
		{"q0", 0, []string{"ababab", "bababa"}},
		{"q2", 2, []string{"aabbab", "bbaaba"}},
	} {
		claims := mustAdmit(t, ctx, s, admitQ("w", 6, v.quantum, v.queue))
		if got := partitionsOf(claims); !slices.Contains(v.turns, got) {
			t.Errorf("quantum %d: admitted %v (partitions %q), want turns %q", v.quantum, ids(claims), got, v.turns)
		}
		for _, p := range []string{"a", "b"} {
			var inPart []string
			for _, c := range claims {
				if c.Envelope.PartitionKey == p {
					inPart = append(inPart, c.Envelope.ID)
				}
			}
			if !slices.IsSorted(inPart) {
				t.Errorf("quantum %d: partition %s admitted out of rank order: %v", v.quantum, p, inPart)
			}
		}
	}
	// Under the default quantum a weight-2 job waits one extra turn for its credit, in
	// the same call.
	h := job("h")
	h.Queue, h.PartitionKey, h.Weight = "qh", "h", 2
	jobs := []headgate.Envelope{h}
	for i := 1; i <= 3; i++ {
		e := job(fmt.Sprintf("l-%d", i))
		e.Queue, e.PartitionKey = "qh", "l"
		jobs = append(jobs, e)
	}
	mustEnqueue(t, ctx, s, jobs...)
	got := ids(mustAdmit(t, ctx, s, admitQ("w", 10, 0, "qh")))
	if !slices.Equal(got, []string{"l-1", "h", "l-2", "l-3"}) && !slices.Equal(got, []string{"l-1", "l-2", "h", "l-3"}) {
		t.Errorf("quantum 0 with a weight-2 job: admitted %v, want h on its second turn: [l-1 h l-2 l-3] or [l-1 l-2 h l-3]", got)
	}
}

// pauseResumePinned: a paused queue holds back work pinned to the caller as well as
// shared work, other queues are still served, and resuming gives each worker its own.
func pauseResumePinned(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.PauseQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	pinned, free, other := job("pinned"), job("free"), job("pinned-other")
	pinned.Queue, pinned.StickyWorker = "q", "w1"
	free.Queue = "q"
	other.Queue, other.StickyWorker = "other", "w1"
	mustEnqueue(t, ctx, s, pinned, free, other) // enqueues succeed while paused
	if got := ids(mustAdmit(t, ctx, s, admitReq("w1", 10, "q", "other"))); !slices.Equal(got, []string{"pinned-other"}) {
		t.Errorf("w1 admitted %v with q paused, want [pinned-other]", got)
	}
	if got := mustAdmit(t, ctx, s, admitReq("w2", 10, "q")); len(got) != 0 {
		t.Errorf("w2 admitted %v from a paused queue", ids(got))
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Queue == "q" && (!st.Paused || st.Counts[headgate.StateAvailable] != 2) {
			t.Errorf("stats of paused q: %+v", st)
		}
	}
	if err := s.ResumeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w2", 10, "q"))); !slices.Equal(got, []string{"free"}) {
		t.Errorf("w2 admitted %v after resume, want [free] (not w1's pinned job)", got)
	}
	claims := mustAdmit(t, ctx, s, admitReq("w1", 10, "q"))
	if got := ids(claims); !slices.Equal(got, []string{"pinned"}) {
		t.Fatalf("w1 admitted %v after resume, want [pinned]", got)
	}
	// Pinned work requeued while the queue is paused again waits for the resume.
	if err := s.PauseQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	mustAck(t, ctx, s, claims[0], headgate.OutcomeRateLimited, nil)
	if got := mustAdmit(t, ctx, s, admitReq("w1", 10, "q")); len(got) != 0 {
		t.Errorf("w1 admitted %v from a paused queue", ids(got))
	}
	if err := s.ResumeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w1", 10, "q"))); !slices.Equal(got, []string{"pinned"}) {
		t.Errorf("w1 admitted %v after the second resume, want [pinned]", got)
	}
}

// rateLongRun: on a stepped store clock, the admitted weight of a class never exceeds
// burst + limit * elapsed / window, checked after every admit call; and a step long
// enough to refill the heaviest job's weight always admits something.
func rateLongRun(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	rl := headgate.RateLimit{Limit: 10, Window: time.Second, Burst: 15}
	if err := s.SetRateLimit(ctx, "api", rl); err != nil {
		t.Fatal(err)
	}
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
	if err := s.SetRateLimit(ctx, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	// Empty the bucket from another queue: the class is fleet-wide.
	drain := job("drain")
	drain.Queue, drain.RateClass = "drain", "slow"
	mustEnqueue(t, ctx, s, drain)
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5, "drain"))); !slices.Equal(got, []string{"drain"}) {
		t.Fatalf("admitted %v, want [drain]", got)
	}

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
	if got := mustAdmit(t, ctx, s, admitReq("w", 100)); len(got) != 0 {
		t.Errorf("admitted %v with the slow class empty", ids(got))
	}
	advance(t, ctx, s, time.Hour-time.Millisecond)
	if got := mustAdmit(t, ctx, s, admitReq("w", 100)); len(got) != 0 {
		t.Errorf("admitted %v before a token refilled", ids(got))
	}
	advance(t, ctx, s, time.Millisecond)
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 100))); !slices.Equal(got, []string{"slow-0"}) {
		t.Errorf("admitted %v once one token refilled, want [slow-0]", got)
	}
	if err := s.RemoveRateLimit(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 100))); !slices.Equal(got, []string{"slow-1", "slow-2"}) {
		t.Errorf("admitted %v after RemoveRateLimit, want [slow-1 slow-2]", got)
	}
}

// rateManyEmptyAhead: 200 partitions whose class has no tokens, ahead of one that needs
// none. An admit call examines a bounded number of jobs, so it may not reach the free
// partition in the first call; but the starved jobs are parked as they are met, so a few
// calls of capacity 1 do, and nothing of the empty class is admitted meanwhile.
func rateManyEmptyAhead(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	if err := s.SetRateLimit(ctx, "slow", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	drain := job("drain")
	drain.Queue, drain.RateClass = "drain", "slow"
	mustEnqueue(t, ctx, s, drain)
	if got := ids(mustAdmit(t, ctx, s, admitReq("w", 5, "drain"))); !slices.Equal(got, []string{"drain"}) {
		t.Fatalf("admitted %v, want [drain]", got)
	}
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
	if err := s.SetRateLimit(ctx, "tu", headgate.RateLimit{Limit: 1, Window: time.Hour, Burst: 10}); err != nil {
		t.Fatal(err)
	}
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
	if got := mustAdmit(t, ctx, s, req); len(got) != 0 {
		t.Errorf("admitted %v with 2 tokens left", ids(got))
	}
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
	if got := mustAdmit(t, ctx, s, req); len(got) != 0 {
		t.Errorf("admitted %v: z reported weight 3 of 1, leaving 0 tokens, not 2", ids(got))
	}
}

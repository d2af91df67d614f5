package rqueuetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/headgate/headgate"
)

// admitDRRCases cover how Admit shares turns among partitions: a quiet partition is not
// starved by a noisy one, weighted shares stay within a quantum, and deficit round robin
// never makes an idle worker wait. When no partition of the ring can spend its credit,
// every credit grows by the rounds the nearest one needs, in one step, so heavy jobs are
// admitted at once while the weighted shares stay those of plain DRR.
var admitDRRCases = []conformanceCase{
	{"Admit/DRR/HeavyJobsAdmittedOnFirstCall", drrHeavyFirstCall},
	{"Admit/DRR/ShortcutKeepsSharesExact", drrShortcutShares},

	// Fairness across partitions.
	{"Admit/Fairness/QuietBehindNoisyCapacity1", quietBehindNoisy(1)},
	{"Admit/Fairness/QuietBehindNoisyCapacity10", quietBehindNoisy(10)},
	{"Admit/Fairness/OwnPinnedBacklogCapacity1", ownPinnedBacklog(1)},
	{"Admit/Fairness/OwnPinnedBacklogCapacity10", ownPinnedBacklog(10)},
	{"Admit/WeightedDRR/EqualWeightWithinQuantumCapacity10", weightedDRR(10)},
	{"Admit/WeightedDRR/EqualWeightWithinQuantumCapacity7", weightedDRR(7)},
	{"Admit/WeightedDRR/HeavierThanQuantumCarriesCredit", heavierThanQuantum},
	{"Admit/QuantumDefaultsToOne", quantumDefault},
}

func weighted(queue, id, part string, weight int) headgate.Envelope {
	e := job(id)
	e.Queue, e.PartitionKey, e.Weight, e.Retention = queue, part, weight, 0
	return e
}

// drrHeavyFirstCall: weights 1, 1,000 and the largest (1,048,576), default quantum 1:
// the first call admits, whatever the mix.
func drrHeavyFirstCall(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	const maxW = headgate.MaxWeight
	for _, v := range []struct {
		queue   string
		weights []int // one partition each
		want    int   // admitted by the first call of capacity 10: all, the worker is idle
	}{
		{"max-only", []int{maxW, maxW}, 2},
		{"thousand-and-max", []int{1000, maxW, maxW}, 3},
		{"mixed", []int{1, 1000, maxW, 1, maxW}, 5},
	} {
		var jobs []headgate.Envelope
		for i, w := range v.weights {
			jobs = append(jobs, weighted(v.queue, fmt.Sprintf("%s-%d", v.queue, i), fmt.Sprint("p", i), w))
		}
		mustEnqueue(t, ctx, s, jobs...)
		claims := mustAdmit(t, ctx, s, admitReq("w", 10, v.queue))
		if len(claims) < v.want {
			t.Errorf("%s (weights %v): first call admitted %v, want at least %d", v.queue, v.weights, ids(claims), v.want)
		}
		// Lightest first: the 1,000 waits 1,000 rounds, the maximum ~1M.
		for i := 1; i < len(claims); i++ {
			if claims[i].Envelope.Weight < claims[i-1].Envelope.Weight {
				t.Errorf("%s: admitted %v: weight %d before %d", v.queue, ids(claims), claims[i-1].Envelope.Weight, claims[i].Envelope.Weight)
			}
		}
	}
}

// drrShortcutShares: partitions of weight 1,000 (b) and the maximum (c, d) with backlogs,
// plus a few weight-1 jobs (a), quantum 1. In plain DRR a partition is admitted its k-th
// job in round k * weight, so when c and d have each had k jobs, b has had
// floor(k * 1,048,576 / 1,000) within one (the order inside a round). The run must take a
// bounded number of calls.
func drrShortcutShares(t *testing.T, s *headgate.Store) {
	ctx := freeze(t, s)
	const maxW = headgate.MaxWeight
	var jobs []headgate.Envelope
	for i := range 5 {
		jobs = append(jobs, weighted("q", fmt.Sprintf("a-%d", i), "a", 1))
	}
	for i := range 2200 {
		jobs = append(jobs, weighted("q", fmt.Sprintf("b-%04d", i), "b", 1000))
	}
	for i := range 3 {
		jobs = append(jobs, weighted("q", fmt.Sprintf("c-%d", i), "c", maxW))
		jobs = append(jobs, weighted("q", fmt.Sprintf("d-%d", i), "d", maxW))
	}
	enqueueChunks(t, ctx, s, jobs, 500)

	count := map[string]int{}
	var seq []string
	const calls = 200
	for call := 1; call <= calls && (count["c"] < 2 || count["d"] < 2); call++ {
		claims := mustAdmit(t, ctx, s, admitReq("w", 50, "q"))
		if len(claims) == 0 {
			t.Fatalf("call %d admitted nothing (%v so far)", call, count)
		}
		for _, c := range claims {
			p := c.Envelope.PartitionKey
			count[p]++
			seq = append(seq, p)
			if p == "c" || p == "d" {
				k := count[p]
				exact := k * maxW / 1000
				if count["b"] < exact-1 || count["b"] > exact+1 {
					t.Errorf("%s's job %d admitted after %d of b's, want %d within one", p, k, count["b"], exact)
				}
			}
		}
		ackAllSuccess(t, ctx, s, claims)
	}
	if count["c"] < 2 || count["d"] < 2 {
		t.Fatalf("after %d calls: admitted %v, want c and d twice each", calls, count)
	}
	if count["a"] != 5 {
		t.Errorf("admitted %d of a's 5 weight-1 jobs", count["a"])
	}
	// a's jobs go in the first five rounds, long before b's round 1,000.
	if len(seq) < 5 || !slices.Equal(seq[:5], []string{"a", "a", "a", "a", "a"}) {
		t.Errorf("first admissions %v, want a's five weight-1 jobs", seq[:min(len(seq), 8)])
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

package rqueuetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/headgate/headgate"
)

// admitDRRCases: deficit round robin never makes an idle worker wait. When no partition
// of the ring can spend its credit, every credit grows by the rounds the nearest one
// needs, in one step, so heavy jobs are admitted at once while the weighted shares stay
// those of plain DRR.
var admitDRRCases = []conformanceCase{
	{"Admit/DRR/HeavyJobsAdmittedOnFirstCall", drrHeavyFirstCall},
	{"Admit/DRR/ShortcutKeepsSharesExact", drrShortcutShares},
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

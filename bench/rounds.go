package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// -rounds runs every scenario several times, the systems in reverse order every other
// round: on a shared machine the load drifts over minutes, and a system that always ran
// second would always meet the later load. The table then reports each metric's median
// over the rounds, and pairedRatios compares each system with the first one named round
// by round, which cancels what the load did to both runs of a round.

// roundOrder is the order of the systems in round (0-based): as named, then reversed.
func roundOrder(systems []System, round int) []System {
	if round%2 == 0 {
		return systems
	}
	r := slices.Clone(systems)
	slices.Reverse(r)
	return r
}

// medianRun is one system's runs of one scenario as one: the first successful run with
// each metric replaced by its median over the successful runs. A system none of whose
// runs succeeded reports its first run's error.
func medianRun(runs []runResult) runResult {
	var ok []runResult
	for _, x := range runs {
		if x.Error == "" {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return runs[0]
	}
	m := ok[0]
	if len(ok) == 1 {
		return m
	}
	m.Metrics = map[string]float64{}
	for key := range ok[0].Metrics {
		var vs []float64
		for _, x := range ok {
			if v, has := x.Metrics[key]; has {
				vs = append(vs, v)
			}
		}
		m.Metrics[key] = medianOf(vs)
	}
	return m
}

// medianOf is the median of vs (the mean of the middle two for an even count).
func medianOf(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// workerCPU is the CPU a run's worker phase cost per job handled, Redis's and the
// harness process's (-stats), or 0 without stats.
func workerCPU(x runResult) float64 {
	if p, ok := workerPhase(x); ok {
		return p.RedisCPU + p.ClientCPU
	}
	return 0
}

// workerPhase is the -stats of a run's worker phase.
func workerPhase(x runResult) (PhaseStats, bool) {
	for _, p := range x.Stats {
		if p.Phase == "worker" {
			return p, true
		}
	}
	return PhaseStats{}, false
}

// harnessMedians are the medians over rounds of what the worker phase cost the harness
// process per job: CPU µs, heap bytes and heap allocations.
func harnessMedians(runs map[int]runResult) (cpu, bytes, allocs float64, ok bool) {
	var c, b, a []float64
	for _, x := range runs {
		if p, found := workerPhase(x); found {
			c, b, a = append(c, p.ClientCPU), append(b, p.ClientAllocBytes), append(a, p.ClientAllocs)
		}
	}
	return medianOf(c), medianOf(b), medianOf(a), len(c) > 0
}

// writePairedRatios prints, for each scenario row and each system after the first, the
// ratio to the first system in each round where both ran, and their median; with -stats
// also the ratio of the worker phase's CPU per job.
func (r *report) writePairedRatios(w io.Writer, list []Scenario, rounds int) {
	if rounds < 2 || len(r.Systems) < 2 {
		return
	}
	base := r.Systems[0]
	byRound := map[string]map[int]runResult{} // scenario/system -> round -> run
	for _, x := range r.Runs {
		k := x.Scenario + "/" + x.System
		if byRound[k] == nil {
			byRound[k] = map[int]runResult{}
		}
		if x.Error == "" {
			byRound[k][x.Round] = x
		}
	}
	fmt.Fprintf(w, "\npaired ratios against %s, per round (rounds alternate the order of the systems), and their median:\n", base)
	for _, sc := range list {
		for _, sys := range r.Systems[1:] {
			b, s := byRound[sc.Name+"/"+base], byRound[sc.Name+"/"+sys]
			rounds := slices.Sorted(maps.Keys(s))
			for _, row := range sc.Rows {
				var ratios []float64
				var cells []string
				for _, i := range rounds {
					bv, okb := b[i].Metrics[row.Key]
					sv, oks := s[i].Metrics[row.Key]
					if okb && oks && bv != 0 {
						ratios = append(ratios, sv/bv)
						cells = append(cells, fmt.Sprintf("%.3f", sv/bv))
					}
				}
				if len(ratios) > 0 {
					fmt.Fprintf(w, "- %s, %s/%s: median %.3f (%s)\n", row.Label, sys, base, medianOf(ratios), strings.Join(cells, " "))
				}
			}
			var ratios []float64
			var cells []string
			for _, i := range rounds {
				if bcpu, scpu := workerCPU(b[i]), workerCPU(s[i]); bcpu > 0 && scpu > 0 {
					ratios = append(ratios, scpu/bcpu)
					cells = append(cells, fmt.Sprintf("%.3f", scpu/bcpu))
				}
			}
			if len(ratios) > 0 {
				fmt.Fprintf(w, "- %s, worker CPU µs/job (redis + harness), %s/%s: median %.3f (%s)\n", sc.Name, sys, base, medianOf(ratios), strings.Join(cells, " "))
			}
			bc, bb, ba, okb := harnessMedians(b)
			sc2, sb, sa, oks := harnessMedians(s)
			if okb && oks {
				fmt.Fprintf(w, "- %s, worker phase, harness process per job (medians): %s %.1f µs CPU, %.0f heap bytes, %.1f allocations; %s %.1f µs, %.0f bytes, %.1f allocations\n",
					sc.Name, sys, sc2, sb, sa, base, bc, bb, ba)
			}
		}
	}
}

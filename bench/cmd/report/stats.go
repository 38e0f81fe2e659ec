package main

import (
	"cmp"
	"slices"

	"golang.org/x/perf/benchmath"
)

// runs holds every run's figures of each benchmark, by unit, in the order
// the runs appear in raw.txt: one a round (runBenchmarks).
type runs map[key]map[string][]float64

func runsOf(samples []sample) runs {
	all := runs{}
	for _, s := range samples {
		if all[s.key] == nil {
			all[s.key] = map[string][]float64{}
		}
		for unit, v := range s.metrics {
			all[s.key][unit] = append(all[s.key][unit], v)
		}
	}
	return all
}

// results holds the median of each metric of each benchmark over its runs,
// as benchstat summarises them.
type results map[key]map[string]float64

func medians(all runs) results {
	r := results{}
	for k, units := range all {
		r[k] = map[string]float64{}
		for unit, vs := range units {
			r[k][unit] = median(vs)
		}
	}
	return r
}

// median returns the center of benchstat's summary of vs: with no
// assumption about the distribution, as benchstat reports by default, the
// median. benchstat's confidence intervals are in results/benchstat.txt.
func median(vs []float64) float64 {
	sample := benchmath.NewSample(slices.Clone(vs), &benchmath.DefaultThresholds) // it sorts
	return benchmath.AssumeNothing.Summary(sample, 0.95).Center
}

// get returns a metric's median and whether it was measured.
func (r results) get(workload, impl string, n int, unit string) (float64, bool) {
	v, ok := r[key{workload, impl, n}][unit]
	return v, ok
}

// sizes returns the sizes measured for a workload, in increasing order.
func (r results) sizes(workload string) []int {
	var ns []int
	for k := range r {
		if k.workload == workload && !slices.Contains(ns, k.n) {
			ns = append(ns, k.n)
		}
	}
	slices.Sort(ns)
	return ns
}

// spread is the range of a benchmark's main figure over its runs.
type spread struct {
	key
	unit   string
	lo, hi float64
}

// mainUnit is the figure each workload is judged by.
var mainUnit = map[string]string{
	"Churn": "ns/op", "ScheduleCancel": "ns/op", "Expire": "ns/timer", "Memory": "ns/op",
}

// wideSpreads returns the benchmarks whose slowest run took more than
// limit times their fastest, in table order.
func wideSpreads(all runs, limit float64) []spread {
	var wide []spread
	for k, units := range all {
		unit := mainUnit[k.workload]
		if vs := units[unit]; len(vs) > 0 {
			if lo, hi := slices.Min(vs), slices.Max(vs); lo > 0 && hi/lo > limit {
				wide = append(wide, spread{key: k, unit: unit, lo: lo, hi: hi})
			}
		}
	}
	slices.SortFunc(wide, func(a, b spread) int {
		if c := cmp.Compare(slices.Index(workloads, a.workload), slices.Index(workloads, b.workload)); c != 0 {
			return c
		}
		if c := cmp.Compare(slices.Index(implOrder, a.impl), slices.Index(implOrder, b.impl)); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	return wide
}

// roundRatio summarises the ratios of one implementation's figure to
// another's taken round by round: the k-th run of one over the k-th run of
// the other.
type roundRatio struct{ median, lo, hi float64 }

// roundRatios returns, for each size of m's workload, impl's figure over
// ref's in each round. Within a round the implementations of one workload
// and size run one after another (runBenchmarks), seconds apart, so a
// ratio taken there is moved less by the load that other jobs put on the
// machine for minutes at a time than a ratio of two medians, each from
// runs minutes apart: one slow round of ref alone moves the median of
// ref, not the rounds' ratios (TestRoundRatios). Runs are paired by their
// order in raw.txt, so a size at which the two were not run the same
// number of times, or ref's figure is not positive, gets no ratio rather
// than pairs that may be from different rounds.
func roundRatios(all runs, m metric, impl, ref string) map[int]roundRatio {
	out := map[int]roundRatio{}
	for k, units := range all {
		vs, refs := units[m.unit], all[key{k.workload, ref, k.n}][m.unit]
		if k.workload != m.workload || k.impl != impl || len(vs) == 0 || len(refs) != len(vs) || slices.Min(refs) <= 0 {
			continue
		}
		ratios := make([]float64, len(vs))
		for i := range vs {
			ratios[i] = vs[i] / refs[i]
		}
		out[k.n] = roundRatio{median(ratios), slices.Min(ratios), slices.Max(ratios)}
	}
	return out
}

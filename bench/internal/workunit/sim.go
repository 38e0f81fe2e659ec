// Package workunit runs the "work unit" timer workload published with the
// Ratas C++ timer wheel (src/test/test_benchmark.cc in
// github.com/jsnell/ratas): pairs of connection-shaped units whose
// traffic, pacing, request deadlines and idle timeouts exercise a timer
// queue, driven by a virtual clock, with a final rx count that is a
// checksum of firing every timer at its exact tick.
//
// It runs over packwheel's hierarchical and hashed wheels, a linked-list
// hierarchical wheel of the classic design (listwheel) and a container/heap
// baseline, each with and without range scheduling of the idle timeouts.
// The simulation is written once, in implgen's template, and generated once
// per implementation (sim_*.go), so that each is called through its
// concrete type, as users call it. It allocates only the units it creates:
// every timer is embedded in its unit and is moved, not reallocated.
package workunit

//go:generate go run gen.go

import "fmt"

// One tick is 20 µs of simulated time, as in the reference.
const (
	ms     = 50
	second = 1000 * ms
)

// Phases of a run, in ticks.
const (
	createPeriod = 1 * second   // pairs are created during the first second
	runEnd       = 300 * second // the run phase ends at 300 s
	maxStep      = 100 * ms     // the run phase advances at most this far at once
)

// Implementations lists the names Run accepts.
var Implementations = []string{"hierarchical", "hashed", "list", "heap"}

// Result is the outcome of a run, which the reference's checksums cover.
type Result struct {
	Pairs int   // work units created
	Rx    int64 // total rx count of the deleted units
}

// Run runs the workload with the requested number of pairs over the named
// implementation, one of Implementations, with range scheduling of the idle
// timeouts on or off.
func Run(impl string, pairs int, useRange bool) (Result, error) {
	r, err := newRunner(impl, pairs, useRange)
	if err != nil {
		return Result{}, err
	}
	r.create()
	r.runUntil(runEnd)
	return r.result(), nil
}

// runner is a simulation over any implementation, by phase.
type runner interface {
	create()
	runUntil(tick uint64)
	now() uint64
	result() Result
}

func newRunner(impl string, pairs int, useRange bool) (runner, error) {
	switch impl {
	case "hierarchical":
		return newhierarchicalSim(pairs, useRange), nil
	case "hashed":
		return newhashedSim(pairs, useRange), nil
	case "list":
		return newlistSim(pairs, useRange), nil
	case "heap":
		return newheapSim(pairs, useRange), nil
	}
	return nil, fmt.Errorf("unknown implementation %q (want one of %v)", impl, Implementations)
}

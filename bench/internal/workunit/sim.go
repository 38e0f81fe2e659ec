// Package workunit runs the "work unit" timer workload published with the
// Ratas C++ timer wheel (shared/workloads/ratas-workload.md): pairs of
// connection-shaped units whose traffic, pacing, request deadlines and idle
// timeouts exercise a timer queue, driven by a virtual clock, with a final rx
// count that is a checksum of firing every timer at its exact tick.
//
// It runs over packwheel's hierarchical and hashed wheels and over the
// container/heap baseline, each with and without range scheduling of the
// idle timeouts. The simulation allocates only the units it creates: every
// timer is embedded in its unit and is moved, not reallocated.
package workunit

import (
	"fmt"

	"github.com/packwheel/packwheel"
	"github.com/packwheel/packwheel/bench/internal/minheap"
)

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
var Implementations = []string{"hierarchical", "hashed", "heap"}

// Queue is what the simulation needs from a timer implementation: a subset
// of packwheel.Timers, generic in the handle type so that the heap baseline,
// whose handle is a minheap.Item rather than a packwheel.Holder, implements
// it too. Every implementation is called through it, so they pay the same
// dispatch cost.
type Queue[H, V any] interface {
	ScheduleAfter(h *H, delay uint64, v V)
	ScheduleRange(h *H, earliest, latest uint64, v V)
	Cancel(h *H) bool
	Now() uint64
	NextExpiry(limit uint64) uint64
	Advance(to uint64, expire func(V))
}

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
		return newSim[packwheel.Holder](new(packwheel.Wheel[*timer[packwheel.Holder]]), pairs, useRange), nil
	case "hashed":
		q := packwheel.NewHashed[*timer[packwheel.Holder]](packwheel.HashedOptions{})
		return newSim[packwheel.Holder](q, pairs, useRange), nil
	case "heap":
		return newSim[minheap.Item](new(minheap.Heap[*timer[minheap.Item]]), pairs, useRange), nil
	}
	return nil, fmt.Errorf("unknown implementation %q (want one of %v)", impl, Implementations)
}

// sim is the state of one run: the driver of the reference's bench().
type sim[H any] struct {
	q        Queue[H, *timer[H]]
	useRange bool
	rand     *glibcRand
	pairs    int   // requested
	created  int   // pairs created
	totalRx  int64 // rx of the units deleted so far
	expire   func(*timer[H])
}

func newSim[H any](q Queue[H, *timer[H]], pairs int, useRange bool) *sim[H] {
	return &sim[H]{
		q:        q,
		useRange: useRange,
		rand:     newGlibcRand(),
		pairs:    pairs,
		expire:   (*timer[H]).expire,
	}
}

// create runs the creation phase: one tick at a time for a second, creating
// pairs at random moments so that about pairs of them are spread over it.
func (s *sim[H]) create() {
	perTick := float64(s.pairs) / createPeriod * 2
	progress := 0.0
	for s.q.Now() < createPeriod {
		progress += float64(s.rand.next()) * perTick / randMax
		for progress > 1 {
			progress--
			s.makePair(1*second + uint64(s.rand.next()%100))
		}
		s.q.Advance(s.q.Now()+1, s.expire)
	}
}

func (s *sim[H]) makePair(requestInterval uint64) {
	server := newUnit(s, 1*second)
	client := newUnit(s, requestInterval)
	server.other, client.other = client, server
	server.start(true)
	client.start(false)
	s.created++
}

// runUntil runs the run phase until Now reaches tick: each step advances to
// the next expiry, or by maxStep if none is sooner.
func (s *sim[H]) runUntil(tick uint64) {
	for s.q.Now() < tick {
		s.q.Advance(s.q.NextExpiry(s.q.Now()+maxStep), s.expire)
	}
}

func (s *sim[H]) now() uint64 { return s.q.Now() }

func (s *sim[H]) result() Result { return Result{Pairs: s.created, Rx: s.totalRx} }

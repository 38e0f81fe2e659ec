package packwheel

// Where the tests of this package live:
//
//	model_test.go       seeded random and fuzz runs of both wheels against a reference model, with the hashed wheel's scans bounded
//	invariants_test.go  the invariant checkers run after every step (Wheel.check, Hashed.check)
//	wheel_test.go       the hierarchical wheel's own behaviour: ScheduleRange's pick
//	level_test.go       levelFor and slotOf at every level's boundaries
//	hashed_test.go      the hashed wheel's own behaviour: timers moved in place, entries scanned per timer
//	bounded_test.go     AdvanceLimit and AppendExpired stopping and resuming
//	misuse_test.go      every refused call: its ErrMisuse message, and nothing changed
//	alloc_test.go       zero allocations, operation by operation and in steady state
//	memory_test.go      memory per timer, and memory given back after a burst
//	inline_test.go      the inlining the hot paths depend on
//	clock_test.go       Clock at the extremes of time
//	bench_test.go       the benchmarks (bench/ compares with other timers)
//	example_test.go     the runnable examples

import (
	"runtime"
	"testing"
)

// conn stands for the caller's per-connection struct, with its Holder
// embedded by value.
type conn struct {
	id    int
	timer Holder
}

// wheelKind makes a fresh wheel of one kind for tests that run on both.
type wheelKind struct {
	name string
	make func() Timers[*conn]
}

var wheelKinds = []wheelKind{
	{"hashed", func() Timers[*conn] { return NewHashed[*conn](HashedOptions{Slots: 256}) }},
	{"wheel", func() Timers[*conn] { return new(Wheel[*conn]) }},
}

// defaultWheelKinds are both wheels at their default sizes, for tests whose
// figures depend on the hashed wheel's 4096 slots.
var defaultWheelKinds = []wheelKind{
	{"hashed", func() Timers[*conn] { return new(Hashed[*conn]) }},
	{"wheel", func() Timers[*conn] { return new(Wheel[*conn]) }},
}

func forEachWheel(t *testing.T, f func(t *testing.T, w Timers[*conn])) {
	for _, k := range wheelKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k.make()) })
	}
}

func mustCheck(t *testing.T, w Timers[*conn]) {
	t.Helper()
	if err := w.(checker).check(); err != nil {
		t.Fatal(err)
	}
}

// bucketOf returns the bucket of an active holder's entry, or -1.
func (s *store[V]) bucketOf(h *Holder) int {
	if s.entries.Find(&h.link) == nil {
		return -1
	}
	return s.entries.BucketOf(&h.link)
}

func (w *Wheel[V]) bucketOf(h *Holder) int  { return w.s.bucketOf(h) }
func (w *Hashed[V]) bucketOf(h *Holder) int { return w.s.bucketOf(h) }

// xorshift returns a xorshift64 generator seeded with seed (not zero): a
// deterministic stream, cheap enough not to show in what the tests count.
func xorshift(seed uint64) func() uint64 {
	return func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
}

// mallocs returns how many heap allocations one call of f made, counted as
// testing.AllocsPerRun counts them but without its uncounted warm-up call,
// for tests whose every call matters: the first after a wave, or one of a
// long run. GOMAXPROCS is 1 meanwhile, as AllocsPerRun sets it.
func mallocs(f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	f()
	runtime.ReadMemStats(&ms)
	return ms.Mallocs - before
}

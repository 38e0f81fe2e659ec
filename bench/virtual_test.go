package bench

// The virtual clock of the wheels and the heap: 1 ms ticks.
const (
	ticksPerSecond = 1000
	timeout        = 30 * ticksPerSecond // churn re-arms this far ahead
	expireWindow   = ticksPerSecond      // expire spreads deadlines over this
)

// pacer advances virtual time during churn: one tick every n/1000
// operations, so that each of n timers is re-armed about once per simulated
// second, which is both what an idle timeout on a busy connection sees and
// slow enough that a timer left alone for 30 s, and so fires, has a
// negligible chance (e^-30).
type pacer struct{ every, left int }

func newPacer(n int) pacer {
	e := max(1, n/ticksPerSecond)
	return pacer{every: e, left: e}
}

// tick reports whether the clock moves on at this operation.
func (p *pacer) tick() bool {
	p.left--
	if p.left > 0 {
		return false
	}
	p.left = p.every
	return true
}

// virtual is what the virtual-clock implementations share besides their
// timer type: items of type T, the random sequence, the pacer and a count of
// expiries, with the expiry callback made once so that passing it to Advance
// allocates nothing.
//
// The loops of hashed_test.go, wheel_test.go and heap_test.go are copies
// on purpose: each calls its implementation's concrete methods, which the
// compiler can inline. Folded into one generic loop over an interface they
// paid an indirect call per operation (one run on 2026-11-22, Churn at
// n=10000: 7.2-8.1 ns became 8.5-13.7 ns for the wheels), which would
// charge packwheel for the benchmark's structure.
type virtual[T any] struct {
	items []T
	rng   rng
	pace  pacer
	fires int64
	count func(*T)
}

func (v *virtual[T]) init(n int) {
	v.items = make([]T, n)
	v.pace = newPacer(n)
	v.count = func(*T) { v.fires++ }
}

func (v *virtual[T]) fired() int64 { return v.fires }

// stop has nothing to do: a virtual clock never fires by itself.
func (v *virtual[T]) stop() {}

package packwheel

import "math"

// base is the half of a wheel that both kinds share, with the methods whose
// behaviour does not depend on the kind: Cancel, Len, Now and the three ways
// to advance. What is per kind is the walk itself: where a deadline's
// bucket is, and how Advance finds the next work. Wheel
// and Hashed embed it, so these methods are theirs.
type base[V any] struct {
	_ noCopy
	s store[V]
	// The wheel that embeds this base, one of the two, set when its
	// buckets are made; both are nil while a zero wheel has scheduled
	// nothing. Concrete pointers rather than an interface: a call through
	// one, passing the sink by value so that it would not escape, made
	// the work-unit workload measurably slower (bench/internal/workunit).
	wheel  *Wheel[V]
	hashed *Hashed[V]
}

// Cancel stops the timer of h and reports whether it was active. Cancelling
// an inactive holder does nothing and returns false. O(1) amortized: a
// bucket left a quarter full moves to a smaller array.
//
// It panics, before changing anything, if h is active but not in this wheel,
// was copied, or was overwritten.
func (w *base[V]) Cancel(h *Holder) bool { return w.s.cancel(h) }

// Len returns the number of active timers. O(1).
func (w *base[V]) Len() int { return w.s.pool.Live() }

// Now returns the last tick whose processing has begun. O(1).
func (w *base[V]) Now() uint64 { return w.s.now }

// Advance processes every tick up to and including to, in order, calling
// expire with the value of each timer as it fires (a nil expire discards
// them); during the call Now equals the timer's deadline. An Advance to a
// tick before Now does nothing. What it costs depends on the kind of wheel
// (see [Wheel] and [Hashed]): O(1) per timer fired or moved plus a few
// bitmap tests per stretch of empty ticks, however long. Once the wheel is
// warm (see the package documentation) it allocates nothing.
//
// It panics if to is beyond MaxTick or if called from an expiry callback.
func (w *base[V]) Advance(to uint64, expire func(V)) {
	out := sink[V]{fn: expire}
	w.advance("Advance", to, math.MaxInt, &out)
}

// AdvanceLimit is Advance that fires, or moves to another bucket, at most n
// timers, so that neither a clump of timers nor a crowded bucket can starve
// the caller's loop. It reports whether it caught up with to; if not, Now
// stays at the tick it stopped in and the next call resumes there, losing
// and reordering nothing. A call to a tick before Now returns true at once,
// even if timers of the tick it stopped in are still pending: only a call
// to Now or later resumes them (TestAdvanceBackwards). n bounds the timers
// fired or moved, not those a hashed wheel compares and leaves for a later
// revolution. It allocates as Advance does, and panics if n <= 0 or as
// Advance does.
func (w *base[V]) AdvanceLimit(to uint64, n int, expire func(V)) bool {
	checkMax("AdvanceLimit", n)
	out := sink[V]{fn: expire}
	return w.advance("AdvanceLimit", to, n, &out)
}

// AppendExpired is AdvanceLimit that appends the value of each expired
// timer to dst and returns the extended slice. Once the wheel is warm it
// allocates only if dst runs out of capacity.
func (w *base[V]) AppendExpired(dst []V, to uint64, n int) ([]V, bool) {
	checkMax("AppendExpired", n)
	out := sink[V]{dst: dst, collect: true}
	done := w.advance("AppendExpired", to, n, &out)
	return out.dst, done
}

// advance is what the three ways to advance share: the checks, the guard
// against re-entry from a callback, and a wheel with no buckets, which has
// nothing to fire.
func (w *base[V]) advance(op string, to uint64, limit int, out *sink[V]) bool {
	checkTick(op, "to", to)
	w.s.running.enter(op)
	if w.wheel != nil && w.wheel.quietUntil(to) {
		// The quiet path: a hierarchical wheel that knows its next work is
		// after to just moves Now, with no callback to guard against. A
		// server advances one tick at a time far more often than a tick
		// has work (BenchmarkChurn in bench/, BenchmarkTick;
		// TestQuietAdvanceFinishesMove).
		w.s.now = max(w.s.now, to)
		w.s.running.leave()
		return true
	}
	defer w.s.running.leave()
	switch {
	case to < w.s.now:
		return true
	case w.wheel != nil:
		return w.wheel.walk(to, limit, out)
	case w.hashed != nil:
		return w.hashed.walk(to, limit, out)
	}
	w.s.now = to // no buckets, nothing to fire
	return true
}

package packwheel

import (
	"math/bits"

	"github.com/packwheel/packwheel/packed"
)

// arrays is how a wheel's buckets get and give back their arrays. An array
// is reused in one of two ways, and policy.go lists every knob of both:
//
//   - Kept in place: a bucket that empties keeps its array, whatever emptied
//     it (a cancel, firing, a move down), marked in kept and counted in
//     keptCap (keep), and its next fill refills that array with no other
//     bookkeeping (store.insert): a request timeout scheduled and cancelled
//     in a bucket of its own touches nothing else. The array the latest
//     bucket of a group left is that group's heir: the next bucket of the
//     group that needs an array it holds takes it (takeHeir), since a crowd
//     that fires or moves down re-arms into a later bucket of the same ring
//     or level, which will need as large an array. A growing bucket that
//     finds nothing else searches the kept arrays too (takeKept). Kept
//     arrays have a budget of one and a half times the live timers plus
//     keptFloor; beyond it, reclaim gives them to the shelf, after a
//     cancel or a drain empties a bucket and at the end of every walk.
//   - Shelved: the arrays buckets leave as they grow or shrink, and those
//     reclaim gives back, wait on a shelf by size class (shelf.go) for a
//     bucket that grows or shrinks to that class. The shelf's budget is an
//     eighth of the live timers plus half of spareFloor, widened while
//     buckets shrink in a wheel whose policy says so (spareBudget).
//
// So that a burst which drains gives its memory back, both budgets fall
// with the live timers and are enforced as arrays arrive
// (TestMemoryPerTimer, TestMemoryAfterBurstWithSurvivors,
// TestDrainEndingInACrowd, TestReclaim).
//
// Its invariants, which checkStore verifies, for every bucket b:
//
//	kept.has(b) == (buckets[b].Len() == 0 && buckets[b].Cap() > 0)
//	keptCap == the sum of buckets[b].Cap() over the kept buckets
type arrays[V any] struct {
	policy   policy
	kept     bitset
	keptCap  int
	keptFrom int    // the word of kept where reclaim and takeKept resume
	heirs    []heir // per group, the kept array that is its heir
	shelf    shelf[V]

	// shrinks holds the least capacities of the classes that the latest
	// shrinks went to, a ring at shrinkAt, and shrinksCap their sum; see
	// spareBudget.
	shrinks    [shrinkMemory]int
	shrinkAt   int
	shrinksCap int
}

// heir is a group's heir: a bucket that kept its array as it emptied, and
// the array's capacity then. It is stale once the bucket no longer keeps
// the array (it refilled, or reclaim took it), which bequeath and takeHeir
// check; a bucket that empties again replaces it, so its capacity is never
// more than the array's.
type heir struct{ bucket, cap int }

func (a *arrays[V]) init(buckets int, p policy) {
	a.policy = p
	a.kept = newBitset(buckets)
	a.heirs = make([]heir, (buckets-1)>>p.groupBits+1)
}

// keep has the empty bucket b keep its array for its next fill (see
// arrays). O(1), with no call: a hierarchical wheel's level-0 slot keeps
// its array each time it fires (Wheel.fire). The callers enforce the
// budget where it costs little (reclaim): after a cancel or a drain
// empties a bucket, and once at the end of every walk.
func (s *store[V]) keep(bucket int, b *packed.Bucket[V]) {
	s.arrays.kept.set(bucket)
	s.arrays.keptCap += b.Cap()
}

// bequeath makes the array the empty bucket b keeps its group's heir (see
// arrays), unless the heir still kept is larger or the bucket is below
// policy.sharedFrom. Call it before keep.
func (s *store[V]) bequeath(bucket int, b *packed.Bucket[V]) {
	a := &s.arrays
	h := &a.heirs[bucket>>a.policy.groupBits]
	if c := b.Cap(); a.shared(bucket, c) && (c >= h.cap || !a.kept.has(h.bucket)) {
		*h = heir{bucket, c}
	}
}

// shared reports whether the array of capacity c that bucket keeps may go
// to another bucket, as its group's heir or to a growing bucket that
// searches the kept arrays: any bucket's from policy.sharedFrom on, and a
// crowd's, of crowdCap entries or more, below it.
func (a *arrays[V]) shared(bucket, c int) bool {
	return bucket >= a.policy.sharedFrom || c >= crowdCap
}

// unkeep marks the empty bucket b, which keeps an array, as no longer
// keeping it: the bucket refills, or the array is about to leave it.
func (s *store[V]) unkeep(bucket int, b *packed.Bucket[V]) {
	s.arrays.kept.clear(bucket)
	s.arrays.keptCap -= b.Cap()
}

// keptBudget is how many entries' worth of arrays the empty buckets may
// keep: one and a half times the live timers, since the timers that left
// them still exist elsewhere in the wheel and may come back, and an array
// has room for up to half again its entries; plus keptFloor, so that a
// small wheel keeps all it needs.
func (s *store[V]) keptBudget() int { return s.live + s.live/2 + keptFloor }

// overKept reports whether the kept arrays are over their budget, the
// test callers make before they call reclaim: it inlines, where a call to
// reclaim at the end of every walk cost a hierarchical wheel 23
// instructions a walk (callgrind, bench's work units).
func (s *store[V]) overKept() bool { return s.arrays.keptCap > s.keptBudget() }

// reclaim gives kept arrays to the shelf until they are back within their
// budget, if they are not (see overKept), taking them round the buckets from where it
// last stopped: O(1) amortized over the arrays kept, plus O(words) of the
// bitmap per round.
func (s *store[V]) reclaim() {
	a := &s.arrays
	for a.keptCap > s.keptBudget() {
		var bucket int
		bucket, a.keptFrom = a.kept.nextFrom(a.keptFrom)
		b := &s.buckets[bucket]
		s.unkeep(bucket, b)
		s.putSpare(b.Move(nil))
	}
}

// grow moves bucket b, full or empty with no array, to an array of the
// next size class: insert's rare case, out of line so that insert's common
// one stays short. An empty bucket enters the occupancy bitmap here.
func (s *store[V]) grow(bucket int, b *packed.Bucket[V]) {
	n := b.Len()
	if n == 0 {
		s.occupied.set(bucket)
	}
	s.growTo(bucket, b, classOf(n)+1)
}

// reserve makes room in bucket b for n more entries in one move, to an
// array of the class that holds them, where insert would grow through each
// class in turn: a caller about to add many entries at once saves the
// copies and the arrays in between. O(Len) when it moves.
func (s *store[V]) reserve(bucket int, b *packed.Bucket[V], n int) {
	if b.Len()+n <= b.Cap() {
		return
	}
	empty := b.Len() == 0
	if empty && b.Cap() > 0 {
		s.unkeep(bucket, b) // its kept array is about to be replaced
	}
	s.growTo(bucket, b, classFor(b.Len()+n))
	if empty {
		// Kept until the entries arrive, as every empty bucket's array is;
		// no budget check, which could give this very array back.
		s.arrays.kept.set(bucket)
		s.arrays.keptCap += b.Cap()
	}
}

// growTo moves bucket b to an array of class c or larger: its group's heir
// if that holds the class; else a spare of class c or a few above (see
// jumpFrom), from the shelf or else kept by an empty bucket (takeKept);
// else a new array of class c. A bucket past jumpFrom entries may take a
// spare up to largeJump classes larger, which is how a bucket that refills
// every rotation jumps to the array the last one left instead of growing
// through every class again; a shorter one at most smallJump, so that it
// does not sit on a huge array.
func (s *store[V]) growTo(bucket int, b *packed.Bucket[V], c int) {
	if heir := s.takeHeir(bucket, classCaps[c]); heir != nil {
		s.putSpare(b.Move(heir))
		return
	}
	top := c + largeJump + 1
	if b.Len() < jumpFrom {
		top = c + smallJump + 1
	}
	for k := c; k < min(top, len(s.arrays.shelf.free)); k++ {
		if a, ok := s.arrays.shelf.take(k); ok {
			s.putSpare(b.Move(a))
			return
		}
	}
	if b.Len() > 0 { // see takeKept
		if a := s.takeKept(c, top); a != nil {
			s.putSpare(b.Move(a))
			return
		}
	}
	s.putSpare(b.Move(newArray[V](c)))
}

// takeHeir returns the array of the heir of bucket's group, if it has one
// still kept of least entries or more, taking it from the bucket that kept
// it; or nil.
func (s *store[V]) takeHeir(bucket, least int) []packed.Entry[V] {
	a := &s.arrays
	h := &a.heirs[bucket>>a.policy.groupBits]
	if h.cap < least || !a.kept.has(h.bucket) {
		return nil
	}
	b := &s.buckets[h.bucket]
	s.unkeep(h.bucket, b)
	*h = heir{}
	return b.Move(nil)
}

// takeKept returns a kept array of class c or more but below top, taken
// from the bucket that kept it, or nil: a growing bucket's last resort
// before a new array. It searches keptScan words of the bitmap at most,
// resuming where the last search or reclaim stopped, and passes over
// arrays that are not shared. A bucket that starts filling does not
// search: the bucket it took from would start without an array in turn, and
// in the work-unit workload level-0 slots took each other's arrays on every
// tick (a quarter of the instructions at 1,000 pairs); one that starts with
// no array takes a new one once, and keeps it.
func (s *store[V]) takeKept(c, top int) []packed.Entry[V] {
	a := &s.arrays
	if a.keptCap == 0 {
		return nil
	}
	for range min(keptScan, len(a.kept)) {
		word := a.kept[a.keptFrom]
		for word != 0 {
			bucket := a.keptFrom<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			b := &s.buckets[bucket]
			if k := classOf(b.Cap()); k >= c && k < top && a.shared(bucket, b.Cap()) {
				s.unkeep(bucket, b)
				return b.Move(nil)
			}
		}
		a.keptFrom = (a.keptFrom + 1) % len(a.kept)
	}
	return nil
}

// shrink moves bucket b, left a quarter full or less but not empty, to an
// array that it half fills, or of shrinkFloor entries if larger, so that a
// bucket that stays mostly empty gives memory back; a bucket between a quarter and all full does not move, so
// one whose size hovers does not move back and forth. It takes a spare of
// that class, else one of the class below, which still holds the entries
// (it is at least two thirds the size) and leaves the bucket between a
// third and three quarters full: a bucket whose size wanders around a
// class boundary wants the class the shelf has just run out of more often
// than the one below (with 100k timers in a hashed wheel re-armed every
// 5000 to 10000 ticks, exact fits alone made a few new arrays per thousand
// ticks). Else a new array. O(Len) when it moves, which the removals since
// the last move have paid for.
func (s *store[V]) shrink(b *packed.Bucket[V]) {
	n := b.Len()
	c := max(classFor(2*n), classFor(shrinkFloor))
	if c >= classOf(b.Cap()) {
		return
	}
	if s.arrays.policy.shrinksWiden {
		s.arrays.noteShrink(c)
	}
	a, ok := s.arrays.shelf.take(c)
	if !ok && c > 0 {
		a, ok = s.arrays.shelf.take(c - 1)
	}
	if !ok && c+1 < classOf(b.Cap()) {
		a, ok = s.arrays.shelf.take(c + 1)
	}
	if !ok {
		a = newArray[V](c)
	}
	s.putSpare(b.Move(a))
}

// thin shrinks bucket b if it is left a quarter full or less and not
// empty, after removals that were not cancels: a hashed wheel's visit.
func (s *store[V]) thin(b *packed.Bucket[V]) {
	if n := b.Len(); n > 0 && n <= b.Cap()/4 {
		s.shrink(b)
	}
}

// putSpare puts an array a bucket left on the shelf, within its budget.
func (s *store[V]) putSpare(a []packed.Entry[V]) { s.arrays.shelf.put(a, s.spareBudget()) }

// spareBudget is how many entries' worth of arrays the shelf keeps: an
// eighth of the live timers (spareShift) plus half of spareFloor, plus, for
// a wheel whose shrinks widen it, what its latest shrinks went to, up to
// shrinksBound times the live timers. While buckets only grow, as when a
// wheel fills, what they outgrow is rarely wanted again. While some also
// shrink, as when a crowded slot drains by cancels while the next one
// fills, the arrays one bucket outgrows on its way up are the ones another
// needs on its way down, most of a rotation later (TestCancelSteadyState).
func (s *store[V]) spareBudget() int {
	return s.live>>spareShift + spareFloor/2 + min(s.arrays.shrinksCap, shrinksBound*s.live)
}

// noteShrink records that a bucket shrinks towards class c (see
// spareBudget).
func (a *arrays[V]) noteShrink(c int) {
	a.shrinksCap += classCaps[c] - a.shrinks[a.shrinkAt]
	a.shrinks[a.shrinkAt] = classCaps[c]
	a.shrinkAt = (a.shrinkAt + 1) % shrinkMemory
}

// spare returns the capacity, in entries, of the arrays kept for reuse:
// on the shelf and kept by empty buckets.
func (a *arrays[V]) spare() int { return a.shelf.spare + a.keptCap }

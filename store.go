package packwheel

import (
	"math/bits"

	"github.com/packwheel/packwheel/packed"
)

// store is the state both wheels share: packed buckets, one occupancy bit
// per bucket, the pool their arrays come from, and the current tick. The
// wheels differ only in which bucket a deadline maps to and in how Advance
// walks the buckets.
//
// The words for what happens to a timer, in both wheels:
//
//	set       a wheel's general path for Schedule, ScheduleAfter and ScheduleRange
//	pushBack  Schedule's inlined fast path: postpone, for a holder checked in one read
//	postpone  give an active timer a later deadline without moving its entry
//	place     move an active timer to the bucket of its deadline (or update it in place)
//	insert    add an entry for an inactive holder, and link the holder to it
//	remove    take an entry out and unlink its holder: a cancel, or the first half of a move
//	drain     take an entry out as its bucket's time comes, leaving the holder linked
//	          for the caller to unlink (fire) or insert again (move down, or place)
//
// A holder's Link.Slot is its bucket plus one, so that zero means inactive:
// slotOf and linkTo are the only places that add or take away the one.
type store[V any] struct {
	now      uint64
	buckets  []packed.Bucket[V]
	occupied []uint64 // bit b%64 of word b/64 is set iff bucket b is not empty
	pool     packed.Pool[V]
	// kept has the bit of each empty bucket that keeps its array for its
	// next fill (see keep), laid out as occupied's; keptCap is the total
	// capacity of those arrays and keptFrom the word where unkeepAny's
	// search resumes.
	kept     []uint64
	keptCap  int
	keptFrom int
	policy   policy
	running  reentry
	hinted   bool // the wheel's hint of its next work holds (see Wheel.hint)
}

// init makes the buckets, whose arrays the wheel's policy p manages.
func (s *store[V]) init(buckets int, p policy) {
	s.policy = p
	s.buckets = packed.MakeBuckets[V](buckets, p.groupSize)
	s.occupied = make([]uint64, (buckets+63)/64)
	s.kept = make([]uint64, (buckets+63)/64)
}

// locate returns the bucket and index of an active holder's entry, after
// checking that the entry points back at this very holder. Any mismatch
// means the holder was copied, belongs to another wheel, or was
// overwritten, and it panics before the caller changes any state.
func (s *store[V]) locate(h *Holder, op string) (*packed.Bucket[V], int) {
	// Unsigned comparisons, so that on a 32-bit platform a corrupted slot
	// or index of 2^31 or more, negative as an int, is refused too.
	slot, index := slotOf(&h.link), int(h.link.Index)
	if uint(slot) < uint(len(s.buckets)) {
		b := &s.buckets[slot]
		if e := b.Entries(); uint(index) < uint(len(e)) && e[index].Link == &h.link {
			return b, index
		}
	}
	panic(foreignHolder{op, h.link.Slot, h.link.Index})
}

// pushBack is the fast path of Schedule and ScheduleAfter, the one that
// pushing an idle timeout back takes: if h is active in this wheel and d is
// later than its entry's own deadline, it postpones the timer in place (see
// postpone) and reports true. Anything else, misuse included, it leaves
// untouched for set to handle or report. No entry is due before now
// (checkStore verifies it after every step of the model tests), so d is
// then in the future too; an entry due at now, left by a bounded advance,
// is why the comparison is strict (TestRescheduleToNowWhilePending).
//
// It is written to inline into Schedule with as few instructions as will
// do: at a million timers the two cache misses of a reschedule overlap with
// the next reschedule's only while few instructions wait behind them
// (BenchmarkReschedule at n=1000000). A version that returned the entry
// for the caller to update measured slower there, as did the call into set
// it spares, and comparing d with now as well would put it over the
// compiler's inlining budget (TestInlining).
func (s *store[V]) pushBack(h *Holder, d uint64, v V) bool {
	if slot, i := slotOf(&h.link), int(h.link.Index); uint(slot) < uint(len(s.buckets)) {
		if e := s.buckets[slot].Entries(); uint(i) < uint(len(e)) && e[i].Link == &h.link && d > e[i].Deadline {
			e[i].Value, h.link.Deadline = v, d
			return true
		}
	}
	return false
}

// place puts the timer of h into bucket slot at deadline d. b and i locate
// h's current entry, or b is nil when h is inactive. An entry that stays in
// its bucket is updated where it is.
func (s *store[V]) place(h *Holder, b *packed.Bucket[V], i, slot int, d uint64, v V) {
	if b != nil {
		old := slotOf(&h.link)
		if old == slot {
			e := b.At(i)
			e.Deadline, e.Value = d, v
			h.link.Deadline = d
			return
		}
		s.remove(old, i)
	}
	s.insert(&h.link, slot, d, v)
}

// postpone gives the active timer of h, entry i of b, the later deadline d
// without moving it: the wheel places it by d when it reaches the entry,
// whose own deadline is the tick it must be looked at by. Pushing an idle
// timeout back then touches one entry and moves nothing.
func (s *store[V]) postpone(h *Holder, b *packed.Bucket[V], i int, d uint64, v V) {
	b.At(i).Value = v
	h.link.Deadline = d
}

// insert appends an entry for link to bucket slot.
func (s *store[V]) insert(link *packed.Link, slot int, d uint64, v V) {
	s.hinted = false
	b := &s.buckets[slot]
	if b.Len() == 0 {
		s.occupied[slot>>6] |= 1 << (slot & 63)
		if b.Cap() > 0 {
			s.unkeep(b, slot)
		} else if s.keptCap > 0 {
			b.Adopt(&s.buckets[s.unkeepAny()])
		}
	}
	b.Push(&s.pool, d, link, v)
	linkTo(link, slot)
	link.Deadline = d
}

// remove takes entry i out of bucket slot, marks its holder inactive, and
// shrinks the bucket if it stays mostly empty: the removal of a cancel or a
// move.
func (s *store[V]) remove(slot, i int) {
	b := &s.buckets[slot]
	unlink(b.Take(&s.pool, i).Link)
	if b.Len() == 0 {
		s.emptied(b, slot)
		s.keep(b, slot)
		return
	}
	if s.policy.shrinkRefills {
		b.ShrinkRefill(&s.pool)
	} else {
		b.Shrink(&s.pool)
	}
}

// next returns the deadline of a timer scheduled at or before now: the
// next tick. It panics, before anything changes, if now is MaxTick, after
// which no tick can be processed.
func (s *store[V]) next(op string) uint64 {
	if s.now == MaxTick {
		panic(misuse("packwheel: " + op + ": Now is MaxTick; no later tick is left to fire at"))
	}
	return s.now + 1
}

// drain takes entry i out of bucket slot, for a bucket being drained as
// its time comes. The entry's holder is left as it was, for the caller to
// relink or unlink. A bucket that empties keeps its array for its next
// fill (see keep).
func (s *store[V]) drain(slot, i int) packed.Entry[V] {
	b := &s.buckets[slot]
	e := b.Take(&s.pool, i)
	if b.Len() == 0 {
		s.occupied[slot>>6] &^= 1 << (slot & 63)
		s.keep(b, slot)
	}
	return e
}

// keep lets the empty bucket slot keep its array for its next fill, if
// the wheel keeps arrays, or gives it back to the pool. A hierarchical
// wheel's slots empty as their timers fire or are cancelled and refill
// with about as many: a level-0 slot of the hierarchical wheel every 64
// ticks, the slot of a request timeout scheduled and cancelled within a
// tick at once. Handing each array to the pool and growing the next fill
// through the size classes again took a fifth of the time of the
// work-unit workload, where timers fire and re-arm constantly. A bucket
// that starts filling with no array of its own adopts a kept one (see
// insert), so kept arrays serve where the pool's would. They have a budget
// of the live timers plus a floor, so that a burst that fires or is
// cancelled for good gives its memory back (TestMemoryPerTimer,
// TestDrainEndingInACrowd).
func (s *store[V]) keep(b *packed.Bucket[V], slot int) {
	if slot < s.policy.ownedBelow && b.Cap() <= ownedCap {
		return // see ownedCap
	}
	if c := b.Cap(); !s.policy.keepArrays || c >= keepBelow {
		b.Release(&s.pool)
	} else if c > 0 {
		s.kept[slot>>6] |= 1 << (slot & 63)
		s.keptCap += c
	}
	for s.keptCap > s.pool.Live()+keptFloor {
		slot := s.unkeepAny()
		s.buckets[slot].Release(&s.pool)
	}
}

// unkeep marks the empty bucket slot as no longer keeping its array for
// its next fill: the fill has begun, or the array is about to be replaced.
func (s *store[V]) unkeep(b *packed.Bucket[V], slot int) {
	if w, bit := slot>>6, uint64(1)<<(slot&63); s.kept[w]&bit != 0 {
		s.kept[w] &^= bit
		s.keptCap -= b.Cap()
	}
}

// unkeepAny returns a bucket that keeps an array, no longer marked as
// keeping it, searching from where the last search stopped: O(1)
// amortized over the arrays kept. There must be one.
func (s *store[V]) unkeepAny() int {
	for s.kept[s.keptFrom] == 0 {
		s.keptFrom = (s.keptFrom + 1) % len(s.kept)
	}
	slot := s.keptFrom<<6 | bits.TrailingZeros64(s.kept[s.keptFrom])
	s.unkeep(&s.buckets[slot], slot)
	return slot
}

func (s *store[V]) emptied(b *packed.Bucket[V], slot int) {
	if b.Len() == 0 {
		s.occupied[slot>>6] &^= 1 << (slot & 63)
	}
}

// cancel implements Cancel for both wheels.
func (s *store[V]) cancel(h *Holder) bool {
	if h.link.Slot == 0 {
		return false
	}
	_, i := s.locate(h, "Cancel")
	s.remove(slotOf(&h.link), i)
	return true
}

// slotOf returns the bucket of the entry a linked Link points at.
func slotOf(l *packed.Link) int { return int(l.Slot) - 1 }

// linkTo records in l that its entry is in bucket slot.
func linkTo(l *packed.Link, slot int) { l.Slot = uint32(slot + 1) }

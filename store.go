package packwheel

import "github.com/packwheel/packwheel/packed"

// store is the state both wheels share: packed buckets, one occupancy bit
// per bucket, the count of live timers, the arrays the buckets reuse
// (arrays.go), and the current tick. The wheels differ only in which
// bucket a deadline maps to and in how Advance walks the buckets.
//
// Its invariants, which checkStore verifies after every step of the model
// tests, for every bucket b and entry i of it:
//
//	occupied.has(b) == (buckets[b].Len() > 0)
//	e := buckets[b].At(i): linkedBucket(e.Link) == b, e.Link.Index == i,
//	                       now <= e.Deadline <= e.Link.Deadline
//	live == the sum of buckets[b].Len()
//
// and those of the arrays, in arrays.go.
//
// The words for where a timer is, in both wheels:
//
//	bucket  a wheel's number for one of its buckets, buckets[bucket]; what a
//	        holder's link records (plus one: see linkedBucket)
//	slot    a hierarchical wheel's index of a bucket within its level, 0 to
//	        63 (level.go); a hashed wheel has one level, its ring of buckets
//	index   an entry's position in its bucket (packed.Link.Index)
//
// and for what happens to a timer:
//
//	set       a wheel's general path for Schedule, ScheduleAfter and ScheduleRange
//	pushBack  Schedule's inlined fast path: postpone, for a holder checked in one read
//	postpone  give an active timer a later deadline without moving its entry
//	move      take an active timer's entry out (cancel) and insert it in another bucket
//	insert    add an entry for an inactive holder, and link the holder to it
//	drain     take an entry out as its bucket's time comes, leaving the holder linked
//	          for the caller to unlink (fire) or insert again (move down, or place)
type store[V any] struct {
	now      uint64
	buckets  []packed.Bucket[V]
	occupied bitset
	live     int
	arrays   arrays[V]
	running  reentry
}

// init makes the buckets, whose arrays the wheel's policy p manages.
func (s *store[V]) init(buckets int, p policy) {
	s.buckets = make([]packed.Bucket[V], buckets)
	s.occupied = newBitset(buckets)
	s.arrays.init(buckets, p)
}

// locate returns the bucket and index of an active holder's entry, after
// checking that the entry points back at this very holder. Any mismatch
// means the holder was copied, belongs to another wheel, or was
// overwritten, and it panics before the caller changes any state.
func (s *store[V]) locate(h *Holder, op string) (int, *packed.Bucket[V], int) {
	// Unsigned comparisons, so that on a 32-bit platform a corrupted bucket
	// or index of 2^31 or more, negative as an int, is refused too.
	bucket, i := linkedBucket(&h.link), int(h.link.Index)
	if uint(bucket) < uint(len(s.buckets)) {
		b := &s.buckets[bucket]
		if e := b.Entries(); uint(i) < uint(len(e)) && e[i].Link == &h.link {
			return bucket, b, i
		}
	}
	panic(foreignHolder{op, h.link})
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
	if bucket, i := linkedBucket(&h.link), int(h.link.Index); uint(bucket) < uint(len(s.buckets)) {
		if e := s.buckets[bucket].Entries(); uint(i) < uint(len(e)) && e[i].Link == &h.link && d > e[i].Deadline {
			e[i].Value, h.link.Deadline = v, d
			return true
		}
	}
	return false
}

// move puts the active timer of h, entry i of bucket from, into bucket to
// at deadline d. An entry that stays in its bucket is updated where it is.
func (s *store[V]) move(h *Holder, from int, b *packed.Bucket[V], i, to int, d uint64, v V) {
	if from == to {
		e := b.At(i)
		e.Deadline, e.Value = d, v
		h.link.Deadline = d
		return
	}
	s.cancel(h)
	s.insert(&h.link, to, d, v)
}

// postpone gives the active timer of h, entry i of b, the later deadline d
// without moving it: the wheel places it by d when it reaches the entry,
// whose own deadline is the tick it must be looked at by. Pushing an idle
// timeout back then touches one entry and moves nothing.
func (s *store[V]) postpone(h *Holder, b *packed.Bucket[V], i int, d uint64, v V) {
	b.At(i).Value = v
	h.link.Deadline = d
}

// insert appends an entry for link to bucket. An empty bucket refills the
// array it kept (see keep) without touching the shelf; a full one, or an
// empty one with no array, gets one in grow, out of line.
func (s *store[V]) insert(link *packed.Link, bucket int, d uint64, v V) {
	b := &s.buckets[bucket]
	if n := b.Len(); n == b.Cap() {
		s.grow(bucket, b)
	} else if n == 0 {
		s.occupied.set(bucket)
		s.unkeep(bucket, b)
	}
	b.Push(d, link, v)
	linkTo(link, bucket)
	link.Deadline = d
	s.live++
}

// cancel implements Cancel for both wheels, and is the first half of a
// move: a swap-remove, the holder unlinked, and, if that left the bucket
// empty or a quarter full, a call to thinned. The common case makes no
// call: with one per layer, the cancel of a request timeout cost four times
// the instructions of a linked list's (callgrind, BenchmarkScheduleCancel
// in bench/).
func (s *store[V]) cancel(h *Holder) bool {
	if h.link.Bucket == 0 {
		return false
	}
	bucket, b, i := s.locate(h, "Cancel")
	b.Remove(i)
	unlink(&h.link)
	s.live--
	if b.Len() <= b.Cap()/4 {
		s.thinned(bucket, b)
	}
	return true
}

// thinned is what a removal that leaves bucket b empty or a quarter full
// calls: an empty bucket keeps its array for its next fill (see keep), and
// a mostly empty one shrinks, so that it gives memory back.
func (s *store[V]) thinned(bucket int, b *packed.Bucket[V]) {
	if b.Len() == 0 {
		s.emptied(bucket, b)
	} else {
		s.shrink(b)
	}
}

// drain takes entry i out of bucket, for a bucket being drained as its
// time comes. The entry's holder is left as it was, for the caller to
// relink or unlink. A bucket that empties keeps its array (see keep).
func (s *store[V]) drain(bucket, i int) packed.Entry[V] {
	b := &s.buckets[bucket]
	e := b.Remove(i)
	s.live--
	if b.Len() == 0 {
		s.emptied(bucket, b)
	}
	return e
}

// emptied records that bucket b has just lost its last entry: it leaves
// the occupancy bitmap and keeps its array for its next fill, as its
// group's heir.
func (s *store[V]) emptied(bucket int, b *packed.Bucket[V]) {
	s.occupied.clear(bucket)
	s.bequeath(bucket, b)
	s.keep(bucket, b)
	if s.overKept() {
		s.reclaim()
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

package packwheel

import "github.com/packwheel/packwheel/packed"

// store is the state both wheels share: their entries, in buckets of
// chunks, with one occupancy bit per bucket (package packed), and the
// current tick. The wheels differ only in which bucket a deadline maps to
// and in how Advance walks the buckets.
//
// Its invariants, which checkStore verifies after every step of the model
// tests and inside their callbacks, beside packed.Store.Check's: for every
// bucket b and entry e of it,
//
//	now <= tick(e.Deadline) <= e.Link.Deadline, equal unless e is postponed
//	a bucket that fires all it holds when reached (level 0, the firing
//	    bucket) holds no e postponed, nor due more than exact ticks after now
//	releaseAt <= now + Retain, and now < releaseAt once an Advance has caught up
//
// The words for where a timer is, in both wheels:
//
//	bucket  a wheel's number for one of its buckets; the entry's chunk
//	        knows it (packed.Store.BucketOf)
//	slot    a hierarchical wheel's index of a bucket within its level, 0 to
//	        63 (level.go); a hashed wheel has one level, its ring of buckets
//	chunk   one array of a bucket's entries, and index an entry's place in
//	        it: what a holder's link records
//
// and for what happens to a timer:
//
//	set       a wheel's general path for Schedule, ScheduleAfter and ScheduleRange
//	postpone  give an active timer a later deadline without moving its entry,
//	          which is flagged (postponed) so that the wheel reads its holder;
//	          Schedule's inlined fast path
//	move      remove an active timer's entry and push it to another bucket
//	push      add an entry to a bucket and link its holder to it (packed.Store.Push)
//	remove    take an entry out, moving the bucket's last into its place, and
//	          unlink its holder (packed.Store.Remove)
//	fire      take a due bucket's entries out from the last, unlinking each
//	          before its callback (packed.Store.PopEach)
type store[V any] struct {
	now     uint64
	entries packed.Store[V]
	// occupied is entries' occupancy bitmap, which it keeps up to date.
	occupied bitset
	running  reentry
	// exact is how many ticks after now the timers of a bucket that
	// fires all it holds when it is reached, the hierarchical wheel's level
	// 0 or the hashed wheel's firing bucket, can be due: 63 and 0. Such a
	// bucket may not hold a timer postponed in place, and a timer due
	// later than that is in none (mayPostpone). Telling it by the entry's
	// tick, which the caller has just read, rather than by its bucket
	// spares postpone a read of the entry's chunk (BenchmarkChurn in
	// bench/).
	exact uint64
	// lap is what postpone clears from the distance between an entry's
	// tick and its timer's later deadline to find the entry's new tick: a
	// hashed wheel's Slots-1, so that the entry waits for its bucket's last
	// visit at or before the deadline, and is not looked at on the visits
	// before it (BenchmarkChurn in bench/); all ones for the hierarchical wheel,
	// whose entries keep their tick.
	lap uint64
	// releaseAt is the tick from which the walk gives the garbage collector
	// the chunks no bucket took for a whole Retain period (release).
	releaseAt uint64
}

// Retain is how many ticks a chunk of entries that no bucket needs stays
// with its wheel before it goes back to the garbage collector: at least
// Retain and at most twice that, counted in the Advances that reach those
// ticks. A wave of timers that returns within Retain ticks finds the
// chunks the last one left, and memory held for a burst goes back once
// the burst has drained (TestMemoryAfterBurst); the wheel keeps a headroom
// of a few square roots of what its buckets needed at their peak
// (packed.Headroom).
//
// It is a default hashed wheel's revolution, 4,096 ticks, which is also
// one turn of the hierarchical wheel's level 1: timers that come back
// once a turn, as a hashed wheel's buckets do, find their chunks
// (TestPatternsAllocateNothing's hashed Expire allocates at every batch
// with a quarter of it). At 1 ms a tick it is about 4 s.
const Retain = DefaultHashedSlots

// postponed is the flag in an entry's Deadline that says its timer was
// postponed in place: its timer's deadline is its Link's, at or after the
// entry's own tick (tick), which is when the wheel must look at it. An
// entry without it is due at its own Deadline, which a wheel moving or
// firing it reads instead of the holder's, in the caller's memory and cold
// at a million timers (BenchmarkExpire in bench/). The flag travels with
// the entry when the store moves it, and a push writes an entry without
// it. Ticks are at most MaxTick, 2^63-1, so the top bit is free.
const postponed = 1 << 63

// tick returns the tick an entry's Deadline d names, without the flag.
func tick(d uint64) uint64 { return d &^ postponed }

// deadlineOf returns the deadline of entry e's timer: its own Deadline,
// or, if it is postponed, its holder's, which only then is read. A wheel
// places an entry whose tick has come by it.
func deadlineOf[V any](e *packed.Entry[V]) uint64 {
	if e.Deadline&postponed != 0 {
		return e.Link.Deadline
	}
	return e.Deadline
}

// init makes the buckets, the first wide of them wide (packed.Store.Init).
func (s *store[V]) init(buckets, wide int, exact, lap uint64) {
	s.entries.Init(buckets, wide)
	s.occupied = s.entries.Occupied()
	s.exact, s.lap = exact, lap
	s.releaseAt = min(s.now, MaxTick) + Retain
}

// locate returns the entry of an active holder, after checking that the
// entry points back at this very holder. Any mismatch
// means the holder was copied, belongs to another wheel, or was
// overwritten, and it panics before the caller changes any state.
func (s *store[V]) locate(h *Holder, op string) *packed.Entry[V] {
	e := s.entries.Find(&h.link)
	if e == nil {
		panic(foreignHolder{op, h.link})
	}
	return e
}

// mayPostpone reports whether a timer whose entry is due at tick t may be
// postponed in place: whether t is more than exact ticks after now. A
// coarse level's timer due within exact ticks is refused too, and set
// moves it instead: a cost paid only in a timer's last 64 ticks.
func (s *store[V]) mayPostpone(t uint64) bool { return t > s.now+s.exact }

// move puts the active timer of h, entry e of bucket from, into bucket to
// at deadline d. An entry that stays in its bucket is updated where it is.
func (s *store[V]) move(h *Holder, e *packed.Entry[V], from, to int, d uint64, v V) {
	if from == to {
		e.Deadline, e.Value = d, v
		h.link.Deadline = d
		return
	}
	s.entries.Remove(&h.link, nil)
	s.entries.Push(to, &h.link, d, v)
}

// postpone gives the timer of h, whose entry Find found as e, the
// deadline d without moving it, if e is not nil, d is not earlier than
// the entry's own deadline and the timer may be postponed (mayPostpone),
// and reports whether it did; anything else, misuse included, it leaves
// untouched for set to handle or report. The wheel places the timer by d
// when it reaches the entry, whose own deadline is the tick it must be
// looked at by: pushing an idle timeout back touches one entry and moves
// nothing. That tick moves on by whole laps (lap) as far as d allows: in
// a hashed wheel, to its bucket's last visit before d. A timer due at now,
// left by a bounded advance, is not postponed, as mayPostpone refuses it
// (TestRescheduleToNowWhilePending).
//
// The entry is flagged (postponed), so that the wheel reads its holder's
// deadline when it moves the entry, and only then. The flag is in the
// entry, whose line the write of the value dirties anyway: a mark kept on
// the bucket would be a store to another line on every reschedule
// (BenchmarkChurn in bench/).
//
// It is Schedule's fast path, and set's. The caller passes Find's answer
// rather than postpone calling Find, so that each is small enough to
// inline into Schedule (TestInlining): with Find inside, it cost 107
// against the inliner's 80 and stayed a call, which BenchmarkChurn in
// bench/ paid at 10k.
func (s *store[V]) postpone(e *packed.Entry[V], h *Holder, d uint64, v V) bool {
	if e == nil {
		return false
	}
	t := tick(e.Deadline)
	if d < t || !s.mayPostpone(t) {
		return false
	}
	e.Deadline, e.Value, h.link.Deadline = (t+(d-t)&^s.lap)|postponed, v, d
	return true
}

// cancel implements Cancel for both wheels: Remove's one call, which
// reports a foreign holder by calling foreignCancel, so that cancel, and
// the wheels' Cancel around it, inline into the caller's code
// (TestInlining; BenchmarkScheduleCancel in bench/, a call fewer per op).
func (s *store[V]) cancel(h *Holder) bool { return s.entries.Remove(&h.link, foreignCancel) }

// fire fires the timers of bucket due at Now, last first so that each
// leaves without moving another, calling deliver with their values, until
// the bucket is empty, n have fired or the last timer is not due at Now,
// and returns how many fired. Each timer is out of the wheel before its
// callback runs, which may panic. A hierarchical wheel's level-0 bucket
// holds only timers due at Now, and its callbacks cannot add to it: what
// they schedule is due after Now, and the bucket holds no timer postponed
// in place (see exact). A hashed wheel's bucket may get a later
// timer, or lose one, from a callback, which then stops fire at a timer
// not due (packed.Store.PopEach), for the wheel to place the rest
// (Hashed.visit).
func (s *store[V]) fire(bucket, n int, deliver func(V)) int {
	return s.entries.PopEach(bucket, n, s.now, deliver)
}

// release gives the garbage collector the chunks that no bucket took for
// a whole Retain period, once a period has passed: the end of every walk
// calls it when now has reached releaseAt.
func (s *store[V]) release() {
	s.entries.Release()
	s.releaseAt = min(s.now, MaxTick) + Retain
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

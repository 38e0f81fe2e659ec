package packwheel

import (
	"fmt"
	"math"
)

// DefaultHashedSlots is the number of slots of a zero Hashed or of one made
// with HashedOptions.Slots == 0.
const DefaultHashedSlots = 4096

// maxHashedSlots bounds HashedOptions.Slots: 2^24 buckets take 512 MiB of
// bucket headers before the first timer, more than a wheel has use for, so
// a larger value is refused as a mistake rather than allocated.
const maxHashedSlots = 1 << 24

// HashedOptions configures a Hashed wheel. The zero value asks for the
// defaults: DefaultHashedSlots buckets.
type HashedOptions struct {
	// Slots is the number of buckets, a power of two from 1 to 1<<24; zero
	// means DefaultHashedSlots. A timer waits in bucket deadline%Slots for
	// as many revolutions as it needs, so more slots mean fewer timers to
	// compare per tick and more memory (32 bytes and a bit per slot, and
	// the first chunk a bucket keeps once it has held a timer: 8 entries).
	Slots int
}

// Hashed is a hashed timing wheel with a single level: a timer lands in
// bucket deadline%Slots and waits there for the revolutions it still needs,
// which are derived from its stored absolute deadline. Processing a tick
// visits one bucket, compares deadlines, and fires the due timers where
// they are, writing to a timer that is not due only to exchange places
// with one that is. A timer pushed back in place keeps its bucket, under
// the tick of that bucket's last visit at or before its new deadline, and
// moves to its deadline's bucket at that visit, or when brought earlier.
//
// Schedule, ScheduleRange and Cancel are O(1). Advance is O(1) per tick
// with an occupied bucket plus O(1) per timer in the buckets it visits;
// an occupancy bitmap skips empty buckets, and once a long Advance has swept
// one revolution it knows the earliest deadline and jumps straight to it.
// NextExpiry costs O(timers in the buckets before the answer); it may answer
// early, with the tick of a timer pushed back in place.
// Buckets are chunks of entries that the wheel reuses (see the package
// documentation).
//
// The zero value is an empty wheel at tick 0 with DefaultHashedSlots
// buckets, allocated on first use. A Hashed must not be copied after first
// use. It is not safe for concurrent use; see [Timers] for the rules it
// follows.
//
// Its invariants, checked after every step of the model tests, are in
// Hashed.check (invariants_test.go).
type Hashed[V any] struct {
	_     noCopy
	s     store[V]
	slots int
	mask  uint64
	// A sweep starts at tick sweepFrom; sweepMin is a lower bound on the
	// deadlines of the timers scheduled, or seen in visited buckets, since.
	// Once a sweep spans a revolution every timer has been seen, so none is
	// due before sweepMin and Advance may jump there. Cancels only make the
	// bound conservative, so it survives from one Advance to the next.
	sweepFrom, sweepMin uint64
	// pending records that the visit of tick now's bucket did not finish:
	// a bounded advance stopped, or a callback panicked. Timers of tick now
	// may be left in the bucket, or in the firing bucket.
	pending bool
	// firing is the bucket after the ring's, which holds the timers of
	// tick now that a visit moved out of their bucket, once a callback
	// had changed it while it fired, until they fire (see visit).
	firing int
	// scanned counts the entries that the visits' scans have read, which
	// TestHashedScansPerTimer bounds per timer and the model tests per
	// advance (boundScans): what fires and when does not show a bucket
	// scanned once too often.
	scanned int
}

// NewHashed returns an empty hashed wheel at tick 0. Unlike a zero Hashed,
// it allocates its buckets up front, so that first use does not pay for
// them: O(Slots), about 32 bytes a slot (132 KB for DefaultHashedSlots;
// TestHashedMemoryPerSlot). It panics with an error matching ErrMisuse, whose
// message names the option, if opts is invalid.
func NewHashed[V any](opts HashedOptions) *Hashed[V] {
	n := opts.Slots
	if n == 0 {
		n = DefaultHashedSlots
	}
	if n < 1 || n > maxHashedSlots || n&(n-1) != 0 {
		panic(misuse(fmt.Sprintf("packwheel: HashedOptions.Slots %d is not a power of two from 1 to %d", opts.Slots, maxHashedSlots)))
	}
	w := &Hashed[V]{slots: n}
	w.ready()
	return w
}

func (w *Hashed[V]) ready() {
	if w.s.occupied != nil {
		return
	}
	if w.slots == 0 {
		w.slots = DefaultHashedSlots
	}
	w.mask = uint64(w.slots - 1)
	w.sweepFrom, w.sweepMin = w.s.now+1, math.MaxUint64
	w.firing = w.slots
	// The firing bucket holds timers due at Now, and fires them all;
	// the ring's buckets postpone in place.
	w.s.init(w.slots+1, 0, 0, w.mask)
}

// Slots returns the number of buckets. O(1).
func (w *Hashed[V]) Slots() int {
	if w.slots == 0 {
		return DefaultHashedSlots
	}
	return w.slots
}

// Schedule sets the timer of h to fire at tick deadline with value v; a
// deadline at or before Now fires at Now()+1. An active timer pushed later
// stays where it is with its new deadline: pushing an idle timeout back
// touches one entry and moves nothing. The entry takes the tick of its
// bucket's last visit at or before that deadline, so that the visits
// before it pass the timer by, and that visit moves it to its deadline's
// bucket, unless a push back since has given it a later tick: a timeout
// pushed back before it comes within a revolution of running out is never
// moved (TestHashedPostponedStaysInBucket). An active timer
// brought earlier than the tick of its entry moves to its new bucket; one
// brought earlier but not that far stays where it is, and NextExpiry may
// then answer that tick, early (TestHashedEarlierInPlace). O(1); it
// allocates only when the wheel's free chunks run out.
//
// It panics, before changing anything, if deadline is beyond MaxTick or h is
// active in another wheel, was copied, or was overwritten.
func (w *Hashed[V]) Schedule(h *Holder, deadline uint64, v V) {
	checkTick("Schedule", "deadline", deadline)
	switch {
	case w.s.postpone(w.s.entries.Find(&h.link), h, deadline, v):
	case h.link.Chunk == 0 && deadline > w.s.now && w.s.occupied != nil:
		// The timer of a holder that is not scheduled, fired or cancelled
		// say, goes straight in; TryPush inlines, and Push is for a
		// bucket that needs a new chunk.
		w.sweepMin = min(w.sweepMin, deadline)
		if b := w.bucketFor(deadline); !w.s.entries.TryPush(b, &h.link, deadline, v) {
			w.s.entries.Push(b, &h.link, deadline, v)
		}
	default:
		w.set(h, deadline, v, "Schedule")
	}
}

// ScheduleAfter is Schedule(h, w.Now()+delay, v). It panics if that is
// beyond MaxTick. O(1); it allocates only when the wheel's free chunks run
// out.
func (w *Hashed[V]) ScheduleAfter(h *Holder, delay uint64, v V) {
	d := afterNow("ScheduleAfter", w.s.now, delay)
	switch {
	case w.s.postpone(w.s.entries.Find(&h.link), h, d, v):
	case h.link.Chunk == 0 && delay > 0 && w.s.occupied != nil:
		// As in Schedule.
		w.sweepMin = min(w.sweepMin, d)
		if b := w.bucketFor(d); !w.s.entries.TryPush(b, &h.link, d, v) {
			w.s.entries.Push(b, &h.link, d, v)
		}
	default:
		w.set(h, d, v, "ScheduleAfter")
	}
}

// ScheduleRange sets the timer of h to fire at a tick in [earliest, latest]
// with value v. When h is already due inside the range it does nothing at
// all, reading only the holder, as [Wheel.ScheduleRange] does. Otherwise
// it picks latest: a hashed wheel's timers do not move on their
// own, so the latest tick leaves the most room for later calls to be
// no-ops. A range wholly at or before Now fires at Now()+1. O(1); it
// allocates only when the wheel's free chunks run out.
//
// It panics, before changing anything, if earliest > latest, latest is
// beyond MaxTick, or h is not a holder of this wheel (see Schedule).
func (w *Hashed[V]) ScheduleRange(h *Holder, earliest, latest uint64, v V) {
	if !h.dueWithin(earliest, latest) {
		w.setRange(h, earliest, latest, v)
	}
}

// setRange is ScheduleRange for a timer not already due in the range, out
// of line for the reason Wheel.setRange gives.
func (w *Hashed[V]) setRange(h *Holder, earliest, latest uint64, v V) {
	checkRange("ScheduleRange", earliest, latest)
	w.set(h, latest, v, "ScheduleRange")
}

func (w *Hashed[V]) set(h *Holder, d uint64, v V, op string) {
	if d <= w.s.now {
		d = w.s.next(op)
	}
	if h.link.Chunk == 0 {
		w.ready()
		w.sweepMin = min(w.sweepMin, d)
		w.s.entries.Push(w.bucketFor(d), &h.link, d, v)
		return
	}
	e := w.s.locate(h, op)
	if w.s.postpone(e, h, d, v) {
		return
	}
	w.sweepMin = min(w.sweepMin, d)
	w.s.move(h, e, w.s.entries.BucketOf(&h.link), w.bucketFor(d), d, v)
}

// Cancel stops the timer of h and reports whether it was active. Cancelling
// an inactive holder does nothing and returns false. O(1).
//
// It panics, before changing anything, if h is active but not in this wheel,
// was copied, or was overwritten.
func (w *Hashed[V]) Cancel(h *Holder) bool { return w.s.cancel(h) }

// Len returns the number of active timers. O(1).
func (w *Hashed[V]) Len() int { return w.s.entries.Entries() }

// Now returns the last tick whose processing has begun. O(1).
func (w *Hashed[V]) Now() uint64 { return w.s.now }

// Advance processes every tick up to and including to, in order, calling
// expire with the value of each timer as it fires (a nil expire discards
// them); during the call Now equals the timer's deadline. An Advance to a
// tick before Now does nothing. It costs O(1) per occupied bucket it
// reaches plus O(1) per timer in it, due or not; empty buckets cost a
// bitmap test per 64, and once it has swept a revolution it jumps to the
// earliest deadline. Once the wheel is warm (see the package
// documentation) it allocates nothing.
//
// It panics if to is beyond MaxTick or if called from an expiry callback.
func (w *Hashed[V]) Advance(to uint64, expire func(V)) {
	w.advance("Advance", to, math.MaxInt, expire)
}

// AdvanceLimit is Advance that fires, or moves to another bucket, at most n
// timers, so that a clump of timers cannot starve the caller's loop. It
// reports whether it caught up with to; if not, Now stays at the tick it
// stopped in and the next call resumes there, losing and reordering
// nothing. A call to a tick before Now returns true at once, even if timers
// of the tick it stopped in are still pending: only a call to Now or later
// resumes them (TestAdvanceBackwards). n bounds the timers fired or moved,
// not those compared and left for a later revolution. It allocates as
// Advance does, and panics if n <= 0 or as Advance does.
func (w *Hashed[V]) AdvanceLimit(to uint64, n int, expire func(V)) bool {
	checkMax("AdvanceLimit", n)
	return w.advance("AdvanceLimit", to, n, expire)
}

// AppendExpired is AdvanceLimit that appends the value of each expired
// timer to dst and returns the extended slice. Once the wheel is warm it
// allocates only if dst runs out of capacity.
func (w *Hashed[V]) AppendExpired(dst []V, to uint64, n int) ([]V, bool) {
	checkMax("AppendExpired", n)
	done := w.advance("AppendExpired", to, n, func(v V) { dst = append(dst, v) })
	return dst, done
}

// advance is what the three ways to advance share: the checks, the guard
// against re-entry from a callback, and a wheel with no buckets, which has
// nothing to fire.
func (w *Hashed[V]) advance(op string, to uint64, limit int, deliver func(V)) bool {
	checkTick(op, "to", to)
	w.s.running.enter(op)
	defer w.s.running.leave()
	switch {
	case to < w.s.now:
		return true
	case w.s.occupied == nil:
		w.s.now = to // no buckets, nothing to fire
		return true
	}
	return w.walk(to, limit, deliver)
}

// NextExpiry returns the earliest tick at which Advance has work to do, or
// limit if that is later; no timer fires before it. The work is firing the
// earliest timer, unless a timer pushed back in place (see Schedule) must be
// moved first. It returns Now when an Advance left timers of the current
// tick unfired. It visits occupied buckets in tick order and stops at the
// first work or at limit, so it costs O(timers in the buckets it visits), at
// most one revolution. It allocates nothing.
func (w *Hashed[V]) NextExpiry(limit uint64) uint64 {
	now := w.s.now
	if w.pending {
		if left, _ := w.left(now); left {
			// Timers of tick now are left, unless they were cancelled since.
			return min(now, limit)
		}
	}
	if limit <= now || w.Len() == 0 {
		return limit
	}
	if !w.pending && now+1-w.sweepFrom >= uint64(w.slots) && w.sweepMin > limit {
		// A sweep has seen every timer since it began: none is due by limit.
		return limit
	}
	// An entry's own deadline is the tick its bucket must be visited at:
	// its timer's, or, if the timer was postponed in place, the tick of
	// its bucket's last visit at or before the timer's (store.postpone).
	earliest := uint64(math.MaxUint64)
	for from := now + 1; ; {
		t, ok := w.nextOccupied(from, min(limit, now+uint64(w.slots)))
		if !ok {
			break
		}
		found, least := w.scan(t)
		if found {
			return t
		}
		earliest = min(earliest, least)
		from = t + 1
	}
	// Either limit came first, or a whole revolution was visited and
	// earliest is the true minimum.
	return min(earliest, limit)
}

// scan reads the timers of bucket t%Slots for one of tick t, postponed in
// place or not, and reports whether it found one; if not, least is the
// least tick of those it read, MaxUint64 for none. It stops at the first
// of tick t, reading from the end, where gather brings them: one that a
// stopped visit left there is found at once. It changes nothing.
func (w *Hashed[V]) scan(t uint64) (found bool, least uint64) {
	least = math.MaxUint64
	for es, prev := w.s.entries.Tail(w.bucketFor(t)); ; es, prev = w.s.entries.Chunk(prev) {
		for i := len(es) - 1; i >= 0; i-- {
			at := tick(es[i].Deadline)
			if at == t {
				return true, least
			}
			least = min(least, at)
		}
		if prev == 0 {
			return false, least
		}
	}
}

// left reports whether timers of tick t, which a visit stopped in, are
// left to fire or move: in the firing bucket, or in their own; if not,
// least is the least tick of the timers their bucket holds (scan).
func (w *Hashed[V]) left(t uint64) (ok bool, least uint64) {
	found, least := w.scan(t)
	return found || !w.s.entries.Empty(w.firing), least
}

// nextOccupied returns the first tick in [from, to] whose bucket is
// occupied, looking at most one revolution ahead. The firing bucket's bit,
// after the ring's, is clear whenever the ring is searched: a visit
// empties the firing bucket before the walk looks further, and NextExpiry
// answers Now while it holds timers (Hashed.check).
func (w *Hashed[V]) nextOccupied(from, to uint64) (uint64, bool) {
	if from > to {
		return 0, false
	}
	span := min(to-from, uint64(w.slots-1)) + 1
	d, ok := w.s.occupied.nextCyclic(w.bucketFor(from), int(span), w.slots)
	return from + uint64(d), ok
}

// bucketFor returns the bucket of tick t: t%Slots.
func (w *Hashed[V]) bucketFor(t uint64) int { return int(t & w.mask) }

// walk is the hashed walk: it costs O(1) per occupied bucket reached plus
// O(1) per timer in it, due or not; empty buckets cost a bitmap test per
// 64, and once it has swept a revolution it jumps to the earliest deadline.
// A bounded one stops after firing or moving limit timers.
func (w *Hashed[V]) walk(to uint64, limit int, deliver func(V)) bool {
	work := 0 // timers fired or moved, which limit bounds
	if w.pending {
		if !w.visit(w.s.now, &work, limit, deliver) && !w.finished(w.s.now) {
			return false
		}
		w.pending = false
	}
	revolution := uint64(w.slots)
	for w.s.now < to {
		if w.sweepMin <= w.s.now {
			// The sweep reached its bound, which says nothing more.
			w.sweepFrom, w.sweepMin = w.s.now+1, math.MaxUint64
		} else if w.s.now+1-w.sweepFrom >= revolution && w.sweepMin > w.s.now+1 {
			// Every bucket was seen since sweepFrom and every timer
			// scheduled since was noted: nothing is due before sweepMin.
			if w.sweepMin > to {
				break
			}
			w.s.now = w.sweepMin - 1
			w.sweepFrom, w.sweepMin = w.s.now+1, math.MaxUint64
		}
		t, ok := w.nextOccupied(w.s.now+1, to)
		if !ok {
			break
		}
		w.s.now = t
		// pending stays set if visit stops at the limit with timers of
		// the tick left, and also if an expiry callback panics, so the
		// next Advance finishes the tick. A visit stopped at the limit
		// with none left, its callbacks having cancelled them, is done,
		// and the walk goes on with no room to fire or move, so that it
		// reports whether it caught up (stoppedShort in model_test.go).
		w.pending = true
		if !w.visit(t, &work, limit, deliver) && !w.finished(t) {
			return false
		}
		w.pending = false
	}
	w.s.now = max(w.s.now, to)
	if w.s.now >= w.s.releaseAt {
		w.s.release()
	}
	return true
}

// visit fires the timers of bucket t%Slots that are due at tick t, and
// places those postponed in place there by their deadlines, firing or
// moving at most limit-work of them, and notes the deadlines it passes in
// sweepMin. It returns false if it stopped at limit.
//
// The timers fire where they are, from the bucket's end (store.fire),
// where gather has brought them by exchanging places with the bucket's
// later timers: nothing moves to another bucket to fire, which cost the
// work units a fifth of their time at 8,000 pairs, where nearly every
// bucket holds timers of later revolutions too
// (bench/results/workunits-large.txt). A timer postponed in place to
// another bucket is gathered with them, and moves there when it comes
// last. The callbacks, which may cancel or schedule anything, never run
// while the bucket is being scanned; one that changes the bucket (a
// cancel moves its last timer into the hole, a schedule adds one at its
// end) stops the fire at a timer not due. The rest of the tick then goes
// the way callbacks cannot disturb: gathered once more, it moves to the
// firing bucket, which fires as a hierarchical wheel's level-0 slot does,
// and nothing a callback schedules lands there. So a visit scans its
// bucket twice at most, however its callbacks change it
// (TestHashedScansPerTimer).
func (w *Hashed[V]) visit(t uint64, work *int, limit int, deliver func(V)) bool {
	if !w.s.entries.Empty(w.firing) {
		// A stopped visit left them: they fire first.
		if *work += w.s.fire(w.firing, limit-*work, deliver); !w.s.entries.Empty(w.firing) {
			return false
		}
	}
	bucket := w.bucketFor(t)
	k, complete := w.gather(t, limit-*work)
	for k > 0 {
		fired := w.s.fire(bucket, k, deliver)
		*work += fired
		if k -= fired; k == 0 {
			return complete
		}
		if es, _ := w.s.entries.Tail(bucket); len(es) == 0 || es[len(es)-1].Deadline != t|postponed {
			break // a callback changed the bucket
		}
		w.moveLast(bucket, t, work) // postponed in place to another bucket
		k--
	}
	if k == 0 {
		return complete
	}
	// The rest of the tick goes by the firing bucket, all of it: gather
	// left room to fire what it moved there, and no callback adds to it.
	k, complete = w.gather(t, limit-*work)
	for ; k > 0; k-- {
		w.moveLast(bucket, t, work)
	}
	*work += w.s.fire(w.firing, limit-*work, deliver)
	return complete
}

// finished reports whether the visit of tick t, stopped at its limit, has
// nothing left to fire or move, as when the callbacks of the timers it
// fired cancelled the rest. If so, it notes in sweepMin the ticks of the
// timers the bucket keeps, as a gather that found every one would have:
// the walk then counts the bucket as seen by the sweep, whose bound must
// cover them (a mutant that dropped the note fails TestHashedRandom).
// O(timers in the bucket); only a bounded advance that stops calls it.
func (w *Hashed[V]) finished(t uint64) bool {
	left, least := w.left(t)
	if !left {
		w.sweepMin = min(w.sweepMin, least)
	}
	return !left
}

// moveLast moves the last entry of bucket t%Slots, which gather brought
// there, to the firing bucket if its timer is due at t, postponed in
// place to t or not, or else to the bucket its deadline places it in,
// which counts in work.
func (w *Hashed[V]) moveLast(bucket int, t uint64, work *int) {
	e := w.s.entries.Pop(bucket)
	to, d := w.firing, t
	if e.Deadline != t && e.Link.Deadline != t {
		d = e.Link.Deadline
		to = w.bucketFor(d)
		w.sweepMin = min(w.sweepMin, d)
		*work++
	}
	if !w.s.entries.TryPush(to, e.Link, d, e.Value) {
		w.s.entries.Push(to, e.Link, d, e.Value)
	}
}

// gather brings the timers of bucket t%Slots due at tick t to the
// bucket's end, with those postponed in place from t to another bucket,
// and returns how many are there. It gathers no more than room, as many
// as may fire or move, and reports whether it found every one. It scans
// the bucket from its end, so that the place it brings the next one to,
// before those it brought, holds a timer it has seen. Only a gather that found every one notes in sweepMin the ticks of
// those it leaves: one that stops at room leaves its visit pending, and
// neither the walk's jump nor NextExpiry's answer from sweepMin comes
// before a visit of the tick gathers the whole bucket (a mutant that
// dropped the note at the last return fails TestHashedRandom).
func (w *Hashed[V]) gather(t uint64, room int) (due int, complete bool) {
	bucket := w.bucketFor(t)
	// First the timers due at t that end the bucket already, all of
	// them when the whole bucket is due: counted where they are, with a
	// compare each, from the end in the last chunk, where a bucket that
	// also holds later timers has its few due ones, and then, if that
	// chunk was all due, a whole chunk at a time in the order of memory,
	// which prefetches a crowded bucket's (BenchmarkFireBucket at 1M; the
	// work units at 300 pairs, 4,921 M instructions reading the last chunk
	// forwards too).
	es, prev := w.s.entries.Tail(bucket)
	w.scanned += len(es)
	i := len(es) - 1 // in es, the last timer not due at t, once found
	for ; i >= 0 && es[i].Deadline == t; i-- {
	}
	for {
		run := len(es) - 1 - i
		if due+run > room {
			return room, false
		}
		due += run
		if i >= 0 || prev == 0 {
			break
		}
		es, prev = w.s.entries.Chunk(prev)
		w.scanned += len(es)
		for j := range es {
			if es[j].Deadline != t {
				i = j
			}
		}
	}
	// Then the rest, from es[i], the last timer not due at t.
	left := uint64(math.MaxUint64) // the least tick of the entries it leaves
	// endEs[end] is the first of those gathered, or the end of the bucket's
	// last chunk; endPrev is the chunk before endEs's.
	endEs, end, endPrev := es, i+1, prev
	for {
		for ; i >= 0; i-- {
			e := &es[i]
			if e.Deadline != t {
				if at := tick(e.Deadline); at != t {
					left = min(left, at)
					continue
				}
				// Postponed in place to t itself, which fires, or to less
				// than a revolution later (store.postpone), which moves.
			}
			if due == room {
				return due, false
			}
			if end == 0 {
				endEs, endPrev = w.s.entries.Chunk(endPrev)
				end = len(endEs)
			}
			end--
			if to := &endEs[end]; to != e {
				w.s.entries.Exchange(e, to)
			}
			due++
		}
		if prev == 0 {
			w.sweepMin = min(w.sweepMin, left)
			return due, true
		}
		es, prev = w.s.entries.Chunk(prev)
		w.scanned += len(es)
		i = len(es) - 1
	}
}

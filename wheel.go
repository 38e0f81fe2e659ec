package packwheel

import "math"

// Wheel is a hierarchical timer wheel: 11 levels of 64 slots, each level 64
// times coarser than the one below (the table in level.go gives each
// level's reach), with one 64-bit occupancy bitmap per level. Every level is a ring of the blocks after Now's: a timer due within
// 64 ticks goes straight to level 0, a ring of exact ticks, and a later one
// to the lowest level whose ring reaches it, found in O(1) from the highest
// bit of its distance with math/bits. As time reaches a coarse slot, its
// timers move down, and every timer fires at its exact tick. A timeout's
// length sets its level, give or take one, so timers that keep firing and
// re-arming with the same timeout never pile up in a coarser level because
// their deadlines cross a block boundary.
//
// Schedule, ScheduleRange and Cancel are O(1). NextExpiry is O(levels), and
// Advance costs O(levels) per occupied slot it reaches plus O(1) per timer
// fired or moved (a timer moves down at most once per nonzero base-64 digit
// of its deadline, plus once each time it was pushed back in place), so
// crossing an hour of empty 1 ms ticks costs a few bitmap tests. Buckets
// are chunks of entries that the wheel reuses (see the package
// documentation).
//
// The zero value is an empty wheel at tick 0, ready to use; its 704 buckets
// are allocated on first use. A Wheel must not be copied after first use. It
// is not safe for concurrent use; see [Timers] for the rules it follows.
//
// Its invariants, checked after every step of the model tests, are in
// Wheel.check (invariants_test.go).
type Wheel[V any] struct {
	_ noCopy
	s store[V]
	// hint is what next last answered NextExpiry, for the Advance that
	// usually follows to start from; hinted says it is still good.
	hint      hint
	hintUntil uint64
	hinted    bool
}

// hint is an answer of Wheel.next kept for the next Advance. Inserting a
// timer whose slot comes due no later than the hint's start would make it
// wrong, so unhint clears hinted then; cancelling one, or postponing one in
// place, leaves it early at worst, and an Advance that reaches a slot with
// nothing left to do there moves on.
type hint struct {
	bucket int
	start  uint64
}

// quietUntil reports whether the wheel knows it has nothing to do up to
// and including tick to: its hint holds and starts later, and no chunks
// are due to go back (store.release; without that clause a quiet wheel
// would keep a burst's chunks until its next walk, which may not come for
// as long as it stays quiet: TestMemoryAfterBurst catches that). A coarse
// slot that a bounded advance left half moved down is due at Now, and so
// is any hint of it.
func (w *Wheel[V]) quietUntil(to uint64) bool {
	return w.hinted && to < w.hint.start && to < w.s.releaseAt
}

// unhint forgets the hint if a timer about to be inserted at deadline d
// might come due no later than the hint's start (see hintUntil). A server
// schedules far more timers than it has ticks with work, each later than
// the next work, and keeping the hint lets every Advance up to there take
// the quiet path (BenchmarkChurn and BenchmarkScheduleCancel in bench/,
// which advance a tick every few operations).
func (w *Wheel[V]) unhint(d uint64) {
	if d <= w.hintUntil {
		w.hinted = false
	}
}

// setHint keeps bucket, coming due at start, as the wheel's next work, with
// the latest deadline hintUntil that a timer inserted while Now stays put
// could have and come due at start or before. A timer of level l comes due
// at the start of its slot's block, one of the blocks after Now's; so for
// each level whose blocks after Now's begin by start, anything up to the
// end of start's block of that level may. For a start in Now's level-1
// block, as nextInBlock's are, that is start itself.
func (w *Wheel[V]) setHint(bucket int, start uint64) {
	until := start
	for l := 1; l < levelCount; l++ {
		if blockOf(start, l) == blockOf(w.s.now, l) {
			break // and so at every level above
		}
		until = max(until, (blockOf(start, l)+1)<<levelShift(l)-1)
	}
	w.hint, w.hintUntil, w.hinted = hint{bucket, start}, until, true
}

func (w *Wheel[V]) ready() {
	if w.s.occupied == nil {
		// Level 0 holds exact ticks, the 64 from Now, and fires all
		// it holds; only coarser levels postpone in place. Its buckets,
		// the first levelSlots, are wide: each fills and fires whole once
		// a revolution of 64 ticks, and a first chunk of 64 entries holds
		// a tick's timers with no chunk boundary to cross up to 64 of
		// them, while level 0 keeps 4,096 entries at most, whatever the
		// wheel holds (BenchmarkExpire and the work units in bench/;
		// bench/results/wide-level0.txt).
		w.s.init(levelCount*levelSlots, levelSlots, levelSlots-1, math.MaxUint64)
	}
}

// bucketFor returns the bucket a deadline d >= now belongs in.
func (w *Wheel[V]) bucketFor(d uint64) int {
	l := levelFor(w.s.now, d)
	// bucketAt(l, slotOf(d, l)), spelled out to stay inlinable.
	return l<<levelBits | int(d>>(uint(l*levelBits)&63)&(levelSlots-1))
}

// Schedule sets the timer of h to fire at tick deadline with value v; a
// deadline at or before Now fires at Now()+1. An active timer pushed later
// while it waits in a coarse level, more than 63 ticks before the deadline
// it was placed by, stays where it is with its new deadline, and is placed
// by it when its slot comes due, as it would have been moved down then
// anyway: pushing an idle timeout back touches one entry and moves nothing.
// Otherwise an active timer moves, in place when its bucket does not
// change. O(1); it allocates only when the wheel's free chunks run out
// (see the package documentation).
//
// It panics, before changing anything, if deadline is beyond MaxTick or h is
// active in another wheel, was copied, or was overwritten.
func (w *Wheel[V]) Schedule(h *Holder, deadline uint64, v V) {
	checkTick("Schedule", "deadline", deadline)
	switch {
	case h.link.Chunk == 0 && deadline > w.s.now && w.s.occupied != nil:
		// The timer of a holder that is not scheduled, fired say, goes
		// straight in; TryPush inlines, and Push is for a bucket that
		// needs a new chunk.
		w.unhint(deadline)
		if b := w.bucketFor(deadline); !w.s.entries.TryPush(b, &h.link, deadline, v) {
			w.s.entries.Push(b, &h.link, deadline, v)
		}
	case w.s.postpone(w.s.entries.Find(&h.link), h, deadline, v):
	default:
		w.set(h, deadline, v, "Schedule")
	}
}

// ScheduleAfter is Schedule(h, w.Now()+delay, v). It panics if that is
// beyond MaxTick. O(1); it allocates only when the wheel's free chunks run
// out.
func (w *Wheel[V]) ScheduleAfter(h *Holder, delay uint64, v V) {
	d := afterNow("ScheduleAfter", w.s.now, delay)
	switch {
	case h.link.Chunk == 0 && delay-1 < levelSlots-1 && w.s.occupied != nil:
		// As in Schedule; a delay of 1 to 63 ticks is level 0's.
		w.unhint(d)
		if b := int(d & (levelSlots - 1)); !w.s.entries.TryPush(b, &h.link, d, v) {
			w.s.entries.Push(b, &h.link, d, v)
		}
	case h.link.Chunk == 0 && delay > 0 && w.s.occupied != nil:
		w.unhint(d)
		if b := w.bucketFor(d); !w.s.entries.TryPush(b, &h.link, d, v) {
			w.s.entries.Push(b, &h.link, d, v)
		}
	case w.s.postpone(w.s.entries.Find(&h.link), h, d, v):
	default:
		w.set(h, d, v, "ScheduleAfter")
	}
}

// ScheduleRange sets the timer of h to fire at a tick in [earliest, latest]
// with value v. When h is already due inside the range it does nothing at
// all: the timer keeps its deadline and the value it was last given, and
// the call reads nothing but the holder, which makes pushing an idle
// timeout back on every packet nearly free (bench/internal/workunit, where
// almost every idle re-arm is such a no-op). Such a no-op cannot tell a
// holder of another wheel from one of this wheel, and need not: it changes
// nothing. Otherwise the wheel picks, among the later half of the ticks
// from max(earliest, Now()+1) to latest (the last n/2+1 of n ticks, rounded
// down: 3 of 4, 3 of 5), the tick that will move the timer between levels
// the fewest times, and among those the latest (TestPickHalf). A range
// wholly at or before Now fires at Now()+1. O(1); it allocates only when
// the wheel's free chunks run out.
//
// It panics, before changing anything, if earliest > latest, latest is
// beyond MaxTick, or h is not a holder of this wheel (see Schedule).
func (w *Wheel[V]) ScheduleRange(h *Holder, earliest, latest uint64, v V) {
	if !h.dueWithin(earliest, latest) {
		w.setRange(h, earliest, latest, v)
	}
}

// setRange is ScheduleRange for a timer not already due in the range, out
// of line so that the no-op saves nothing to the stack: with this inline,
// the compiler spilled all four arguments before the test (bench's work
// units, where nearly every idle re-arm is a no-op; their instruction
// counts are in bench/results/instructions.txt).
func (w *Wheel[V]) setRange(h *Holder, earliest, latest uint64, v V) {
	checkRange("ScheduleRange", earliest, latest)
	w.set(h, w.pick(earliest, latest), v, "ScheduleRange")
}

// pick chooses a deadline in [lo, hi] for ScheduleRange. A timer at level L
// moves down once, plus once per nonzero digit between levels 1 and L-1 of
// its deadline. So the candidates are hi and the last tick of each level's
// ring before hi, which may sit a level lower, each also with low digits
// cleared, which trades lateness for moves. O(levels²) at worst, and only
// when the timer is not already due in the range.
func (w *Wheel[V]) pick(lo, hi uint64) uint64 {
	now := w.s.now
	if hi <= now {
		return hi
	}
	lo = max(lo, now+1)
	// Only the later half of the range is considered: an early deadline
	// would save a move but shorten the window in which later calls are
	// no-ops.
	lo += (hi - lo) / 2
	best, fewest := hi, moves(now, hi)
	for l := range levelCount {
		x := hi
		if blockOf(hi, l)-blockOf(now, l) >= levelSlots {
			x = (blockOf(now, l)+levelSlots)<<levelShift(l) - 1 // the end of level l's ring
		}
		for k := 1; k < levelCount && x >= lo && fewest > 0; k++ {
			// Clear digits 1..k-1; digit 0 costs no move, so make it as
			// late as x allows.
			c := min(x, x&^(uint64(1)<<levelShift(k)-1)|(levelSlots-1))
			if c < lo {
				break
			}
			if m := moves(now, c); m < fewest || m == fewest && c > best {
				best, fewest = c, m
			}
		}
		if x == hi {
			break // the rings of this level and above reach hi
		}
	}
	return best
}

// moves returns how many times a timer for deadline d > now, scheduled at
// tick now, will move down a level before it fires.
func moves(now, d uint64) int {
	l := levelFor(now, d)
	if l == 0 {
		return 0
	}
	n := 1
	for k := 1; k < l; k++ {
		if slotOf(d, k) != 0 {
			n++
		}
	}
	return n
}

func (w *Wheel[V]) set(h *Holder, d uint64, v V, op string) {
	if d <= w.s.now {
		d = w.s.next(op)
	}
	if h.link.Chunk == 0 {
		w.ready()
		w.unhint(d)
		w.s.entries.Push(w.bucketFor(d), &h.link, d, v)
		return
	}
	e := w.s.locate(h, op)
	if w.s.postpone(e, h, d, v) {
		return
	}
	w.unhint(d)
	w.s.move(h, e, w.s.entries.BucketOf(&h.link), w.bucketFor(d), d, v)
}

// Cancel stops the timer of h and reports whether it was active. Cancelling
// an inactive holder does nothing and returns false. O(1).
//
// It panics, before changing anything, if h is active but not in this wheel,
// was copied, or was overwritten.
func (w *Wheel[V]) Cancel(h *Holder) bool { return w.s.cancel(h) }

// Len returns the number of active timers. O(1).
func (w *Wheel[V]) Len() int { return w.s.entries.Entries() }

// Now returns the last tick whose processing has begun. O(1).
func (w *Wheel[V]) Now() uint64 { return w.s.now }

// Advance processes every tick up to and including to, in order, calling
// expire with the value of each timer as it fires (a nil expire discards
// them); during the call Now equals the timer's deadline. An Advance to a
// tick before Now does nothing. It costs O(levels) per occupied slot it
// reaches plus O(1) per timer fired or moved, however many empty ticks it
// crosses. Once the wheel is warm (see the package documentation) it
// allocates nothing.
//
// It panics if to is beyond MaxTick or if called from an expiry callback.
func (w *Wheel[V]) Advance(to uint64, expire func(V)) {
	w.advance("Advance", to, math.MaxInt, expire)
}

// AdvanceLimit is Advance that fires, or moves down a level, at most n
// timers, so that neither a clump of timers nor a crowded coarse slot can
// starve the caller's loop: O(n·levels) at most. It reports whether it
// caught up with to; if not, Now stays at the tick it stopped in and the
// next call resumes there, losing and reordering nothing. A call to a tick
// before Now returns true at once, even if timers of the tick it stopped in
// are still pending: only a call to Now or later resumes them
// (TestAdvanceBackwards). It allocates as Advance does, and panics if
// n <= 0 or as Advance does.
func (w *Wheel[V]) AdvanceLimit(to uint64, n int, expire func(V)) bool {
	checkMax("AdvanceLimit", n)
	return w.advance("AdvanceLimit", to, n, expire)
}

// AppendExpired is AdvanceLimit that appends the value of each expired
// timer to dst and returns the extended slice. Once the wheel is warm it
// allocates only if dst runs out of capacity.
func (w *Wheel[V]) AppendExpired(dst []V, to uint64, n int) ([]V, bool) {
	checkMax("AppendExpired", n)
	done := w.advance("AppendExpired", to, n, func(v V) { dst = append(dst, v) })
	return dst, done
}

// advance is what the three ways to advance share: the checks, the guard
// against re-entry from a callback, the quiet path, a wheel with no
// buckets, which has nothing to fire, and the hierarchical walk. The walk
// costs O(levels) per occupied slot reached plus O(1) per timer fired or
// moved, however many empty ticks it crosses, and a bounded one fires or
// moves down a level at most limit timers, with every occupied slot it
// reaches giving it one, so O(limit·levels) at most.
func (w *Wheel[V]) advance(op string, to uint64, limit int, deliver func(V)) bool {
	checkTick(op, "to", to)
	w.s.running.enter(op)
	if w.quietUntil(to) {
		// The quiet path: a wheel that knows its next work is after to
		// just moves Now, with no callback to guard against. A server
		// advances one tick at a time far more often than a tick has work
		// (BenchmarkChurn in bench/, BenchmarkTick;
		// TestQuietAdvanceFinishesMove).
		w.s.now = max(w.s.now, to)
		w.s.running.leave()
		return true
	}
	defer w.s.running.leave()
	switch {
	case to < w.s.now:
		return true
	case w.s.occupied == nil:
		w.s.now = to // no buckets, nothing to fire
		return true
	}
	// The walk, in this same function rather than a call of its own: an
	// Advance that fires one bucket, a server's usual step, then pays for
	// one call and one frame (bench's work units; their instruction counts
	// are in bench/results/instructions.txt).
	work := 0 // timers fired or moved, which limit bounds
	hinted := w.hinted
	w.hinted = false
	for {
		bucket, start, ok := w.hint.bucket, w.hint.start, true
		if !hinted {
			bucket, start, ok = w.next()
		}
		hinted = false
		if !ok || start > to {
			if ok {
				// Until something is inserted nothing is due before start,
				// however far Now moves short of it: the Advances that follow
				// up to there take advance's quiet path.
				w.setHint(bucket, start)
			}
			break
		}
		w.s.now = start
		if bucket >= levelSlots {
			// A move down that a bounded advance stopped is resumed here:
			// next finds its slot due at Now, which starts the slot's
			// block, before any finer slot of the same tick.
			if !w.cascade(bucket, &work, limit) {
				return false
			}
			continue
		}
		// fire stops short of emptying the bucket only at the limit.
		if work += w.s.fire(bucket, limit-work, deliver); work == limit && !w.s.entries.Empty(bucket) {
			return false
		}
		if start == to {
			// Every slot due by now has gone: coarse ones go first on a
			// tie, and what the callbacks scheduled is due later.
			break
		}
	}
	if to > w.s.now {
		w.s.now = to
	}
	if w.s.now >= w.s.releaseAt {
		w.s.release()
	}
	return true
}

// NextExpiry returns the earliest tick at which Advance has work to do, or
// limit if that is later; no timer fires before it. When the next work is a
// timer in level 0, which holds the timers due within 64 ticks, the answer
// is its exact deadline; when it is a coarse slot, it is the start of that
// slot, where Advance will move its timers down a level. It returns Now
// when a bounded advance left timers of the current tick unfired or a
// coarse slot half moved.
// O(levels); it allocates nothing.
func (w *Wheel[V]) NextExpiry(limit uint64) uint64 {
	if w.s.occupied == nil {
		return limit
	}
	if start, ok := w.nextInBlock(); ok {
		// next's common case, and setHint's for it written out, as
		// neither inlines: a server asks for the next work at every step
		// (bench's work units; their instruction counts are in
		// bench/results/instructions.txt).
		if !w.s.running {
			w.hint, w.hintUntil, w.hinted = hint{bucketAt(0, slotOf(start, 0)), start}, start, true
		}
		return min(start, limit)
	}
	bucket, start, ok := w.next()
	if !ok {
		return limit
	}
	if !w.s.running {
		// From an expiry callback the answer is for a tick the walk
		// running it moves past; a hint kept from there would outlive
		// the walk (TestEarlyFireAfterNextExpiryInCallback).
		w.setHint(bucket, start)
	}
	return min(start, limit)
}

// next returns the bucket Advance must process next and the tick at which
// to process it: the earliest first occupied slot of the levels' rings. A
// coarse ring reaches further than the rings above it begin, so levels are
// looked at from level 0 up until the next block of a level starts after
// the best slot found, as every level above starts later still. On a tie
// the coarser slot goes first, so that its timers for that tick join the
// level below before it is processed.
func (w *Wheel[V]) next() (bucket int, start uint64, ok bool) {
	if w.s.occupied == nil {
		return 0, 0, false
	}
	if start, ok := w.nextInBlock(); ok {
		return bucketAt(0, slotOf(start, 0)), start, true
	}
	now := w.s.now
	for l := range levelCount {
		shift := levelShift(l)
		// A coarse slot of now's own block is due now, and can hold
		// timers only when now starts that block: a bounded advance
		// stopped there, or a coarser slot of the same tick went first.
		// Once a level's next block starts after the best slot, so does
		// every coarser level's, and its timers are not looked at
		// either, occupied or not: the levels above the timers' own
		// cost no test (bench's work units, which ask for the next work
		// at every step).
		if ok && now&(1<<shift-1) != 0 && (blockOf(now, l)+1)<<shift > start {
			break
		}
		occ := w.s.occupied[l] // level l's buckets are word l
		if occ == 0 {
			continue
		}
		// Bit i of the rotated map is the slot of the i-th block after
		// now's; now's own slot at level 0 holds timers of tick now that a
		// bounded advance left.
		pos := slotOf(now, l)
		i := nextInRing(occ, pos)
		if c := max(now, (blockOf(now, l)+uint64(i))<<shift); !ok || c <= start {
			bucket, start, ok = bucketAt(l, (pos+i)&(levelSlots-1)), c, true
		}
	}
	return bucket, start, ok
}

// nextInBlock is next's common case, answered without the walk of the
// levels: the deadline of the first level-0 timer due in Now's own level-1
// block, before the next block of any coarser level begins. Not when Now
// starts a block, where a coarser slot of Now's may still hold timers of
// tick Now (see next). The wheel must have its buckets. Small enough to
// inline.
func (w *Wheel[V]) nextInBlock() (start uint64, ok bool) {
	now := w.s.now
	if pos, occ := slotOf(now, 0), w.s.occupied[0]; occ != 0 && pos != 0 {
		if i := nextInRing(occ, pos); pos+i < levelSlots {
			return now + uint64(i), true
		}
	}
	return 0, false
}

// cascade moves the timers of a coarse bucket whose time has come to where
// their deadlines now place them, relative to Now, which is the slot's
// first tick: a level below, or the same level or above for a timer
// postponed in place. The holder's deadline is the timer's; the entry's may
// be older. It stops when work reaches limit, leaving the rest for the
// next walk.
func (w *Wheel[V]) cascade(bucket int, work *int, limit int) bool {
	// The entries are read in place, from the tail chunk's last, and each
	// tail chunk's moved entries are cut at once: popping each would
	// update the bucket's counts and clear its place per timer. Push
	// never goes to this bucket (a timer of it is due in the block Now has
	// reached, so at a finer level, or, postponed, in a later block, so in
	// another slot) and never moves a chunk's array, so es stays valid
	// (TestWheelRandom fails when a wrong deadline sends a timer there).
	for !w.s.entries.Empty(bucket) {
		es, _ := w.s.entries.Tail(bucket)
		i := len(es)
		for ; i > 0 && *work < limit; i-- {
			e := &es[i-1]
			d := deadlineOf(e)
			if to := w.bucketFor(d); !w.s.entries.TryPush(to, e.Link, d, e.Value) {
				w.s.entries.Push(to, e.Link, d, e.Value)
			}
			*work++
		}
		w.s.entries.Cut(bucket, len(es)-i)
		if i > 0 {
			return false
		}
	}
	return true
}

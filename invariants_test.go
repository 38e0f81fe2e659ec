package packwheel

import (
	"fmt"
	"math"

	"github.com/packwheel/packwheel/packed"
)

// checker is implemented by both wheels in tests: check verifies every
// internal invariant and returns the first violation; nextWork computes
// NextExpiry's answer from the entries.
type checker interface {
	check() error
	checkInCallback() error
	checkCaughtUp() error
	nextWork() uint64
	bucketOf(h *Holder) int
}

// checkCaughtUp verifies what holds once an Advance to now or later has
// caught up: the walk, or the quiet path, has released the chunks due to
// go back, so the next release is due after now.
func checkCaughtUp[V any](s *store[V]) error {
	if s.occupied != nil && s.now >= s.releaseAt {
		return fmt.Errorf("caught up at %d with a release due at %d", s.now, s.releaseAt)
	}
	return nil
}

func (w *Wheel[V]) checkCaughtUp() error  { return checkCaughtUp(&w.s) }
func (w *Hashed[V]) checkCaughtUp() error { return checkCaughtUp(&w.s) }

// checkStore verifies what both wheels share, the invariants stated at
// store and packed.Store: each entry's holder points back at it, each
// bucket's occupancy bit says whether it holds entries, Len counts the
// entries, no entry is due before now or after its holder, the next
// release of unused chunks is due within Retain, and placed accepts each
// entry's position: its bucket, its tick, its timer's deadline and
// whether it is postponed.
func checkStore[V any](s *store[V], inCallback bool, placed func(bucket int, at, deadline uint64, postponed bool) error) error {
	entries := !inCallback || s.entries.Entries() <= callbackEntries
	if entries {
		if err := s.entries.Check(); err != nil {
			return err
		}
	}
	n := 0
	for bucket := range s.entries.Buckets() {
		if bit := s.occupied.has(bucket); bit != !s.entries.Empty(bucket) {
			return fmt.Errorf("bucket %d: occupancy bit %v, empty %v", bucket, bit, s.entries.Empty(bucket))
		}
		if n := s.entries.Len(bucket); s.entries.Empty(bucket) != (n == 0) {
			return fmt.Errorf("bucket %d: empty %v, entries %d", bucket, s.entries.Empty(bucket), n)
		}
		for es, prev := s.entries.Tail(bucket); ; es, prev = s.entries.Chunk(prev) {
			n += len(es)
			if entries {
				for i := range es {
					e := &es[i]
					l, at := e.Link, tick(e.Deadline)
					switch found := s.entries.Find(l); {
					case found != e || s.entries.BucketOf(l) != bucket:
						return fmt.Errorf("bucket %d index %d of the chunk after chunk %d (0: the first): holder finds another entry or bucket", bucket, i, prev)
					case l.Deadline < at:
						return fmt.Errorf("bucket %d: holder deadline %d before entry's %d", bucket, l.Deadline, at)
					case at < s.now:
						return fmt.Errorf("bucket %d: deadline %d before now %d", bucket, at, s.now)
					case l.Deadline != e.Deadline && e.Deadline&postponed == 0:
						return fmt.Errorf("bucket %d: timer postponed in place to %d, from %d, and the entry is not flagged", bucket, l.Deadline, at)
					}
					if err := placed(bucket, at, l.Deadline, e.Deadline&postponed != 0); err != nil {
						return fmt.Errorf("bucket %d deadline %d now %d: %w", bucket, at, s.now, err)
					}
				}
			}
			if prev == 0 {
				break
			}
		}
	}
	if n != s.entries.Entries() {
		return fmt.Errorf("Len %d, entries %d", s.entries.Entries(), n)
	}
	if s.releaseAt > s.now+Retain {
		return fmt.Errorf("chunks go back at %d, more than Retain after now %d", s.releaseAt, s.now)
	}
	if bool(s.running) != inCallback {
		return fmt.Errorf("marked as advancing: %v, in a callback: %v", bool(s.running), inCallback)
	}
	return nil
}

// callbackEntries is how many timers a wheel may hold for checkStore to
// check every entry from inside each expiry callback; above it, there it
// checks what the wheel caches about its buckets (bits, counts, hints),
// which costs O(buckets), and leaves the entries to the check after the
// step: a crowd of 5,000 firing would otherwise cost 25 million entry
// checks.
const callbackEntries = 512

// check verifies that every entry sits at level L slot s where s is the L-th
// digit of its deadline: at level 0, within the 64 ticks from now (in now's
// own slot only for timers of tick now left by a bounded advance); at a
// coarse level, in one of the 63 blocks of its ring after now's, or in
// now's block only if a bounded advance left it, or a coarser slot of the
// same tick, half moved down.
func (w *Wheel[V]) check() error { return w.checkState(false) }

// checkInCallback is check from inside an expiry callback, where the
// wheel is marked as advancing.
func (w *Wheel[V]) checkInCallback() error { return w.checkState(true) }

func (w *Wheel[V]) checkState(inCallback bool) error {
	if w.s.occupied == nil {
		return nil
	}
	now := w.s.now
	if w.hinted {
		// A hint may be early (its bucket emptied since) but never late,
		// nor behind Now, nor name another bucket of its tick, which would
		// go first; and no timer inserted later than hintUntil may come
		// due by the hint's start.
		bucket, start, ok := w.next()
		switch {
		case w.hint.start < now:
			return fmt.Errorf("hint: hinted tick %d is behind now %d", w.hint.start, now)
		case ok && start < w.hint.start:
			return fmt.Errorf("hint: next work at %d, hinted %d", start, w.hint.start)
		case ok && start == w.hint.start && bucket != w.hint.bucket && !w.s.entries.Empty(w.hint.bucket):
			return fmt.Errorf("hint: next work in bucket %d, hinted %d, at %d", bucket, w.hint.bucket, start)
		}
		// The earliest a timer due after hintUntil can come due is at
		// hintUntil+1 or at the first tick of a block after it.
		for l := range levelCount {
			d := (blockOf(w.hintUntil, l) + 1) << levelShift(l)
			if l == 0 || d > MaxTick || d <= w.hintUntil {
				d = w.hintUntil + 1
			}
			if d <= MaxTick && d > now && w.dueAt(d) <= w.hint.start {
				return fmt.Errorf("hint: a timer due %d, after hintUntil %d, comes due at %d, by the hinted %d",
					d, w.hintUntil, w.dueAt(d), w.hint.start)
			}
		}
	}
	return checkStore(&w.s, inCallback, func(bucket int, d, _ uint64, postponed bool) error {
		l := levelOf(bucket)
		s := bucket - bucketAt(l, 0)
		pos := slotOf(now, l)
		ahead := blockOf(d, l) - blockOf(now, l) // blocks after now's
		switch {
		case slotOf(d, l) != s:
			return fmt.Errorf("level %d slot %d holds the wrong digit", l, s)
		case l == 0 && d-now >= levelSlots:
			return fmt.Errorf("level 0 holds a deadline 64 ticks or more away")
		case l == 0 && postponed:
			return fmt.Errorf("level 0 holds a timer postponed in place")
		case l == 0 && (s == pos) != (d == now):
			return fmt.Errorf("level 0 slot %d, now's slot %d", s, pos)
		case l == 0:
		case ahead == 0 && now&(1<<levelShift(l)-1) == 0:
			// Due now, which next allows when now starts the slot's block:
			// a slot a bounded advance left half moved down, or a finer
			// one that a coarser slot of the same tick moved timers to.
			// CI's fresh seed 16824118602306833210 reached the second
			// state, and every timer of that run fired on time.
		case ahead == 0 || ahead >= levelSlots:
			return fmt.Errorf("level %d: deadline %d blocks after now's, outside the ring", l, ahead)
		}
		return nil
	})
}

// dueAt returns the tick at which a timer inserted now for deadline d > now
// comes due: the start of its block at the level it is placed in.
func (w *Wheel[V]) dueAt(d uint64) uint64 {
	l := levelFor(w.s.now, d)
	return max(w.s.now, blockOf(d, l)<<levelShift(l))
}

// nextWork is NextExpiry's answer computed the slow way: the least tick at
// which an entry must be visited, its deadline at level 0 and the start of
// its block at a coarse level, but never before now.
func (w *Wheel[V]) nextWork() uint64 {
	least := uint64(math.MaxUint64)
	forEachEntry(&w.s, func(bucket int, e *packed.Entry[V]) {
		l := levelOf(bucket)
		least = min(least, max(w.s.now, blockOf(tick(e.Deadline), l)<<levelShift(l)))
	})
	return least
}

// check verifies that every entry sits in bucket deadline%Slots, that
// timers of tick now remain only after an unfinished visit, and that a sweep
// spanning a revolution bounds every deadline.
func (w *Hashed[V]) check() error { return w.checkState(false) }

// checkInCallback is check from inside an expiry callback, where the
// wheel is marked as advancing.
func (w *Hashed[V]) checkInCallback() error { return w.checkState(true) }

func (w *Hashed[V]) checkState(inCallback bool) error {
	if w.s.occupied == nil {
		return nil
	}
	// The sweep has seen the buckets of ticks sweepFrom..now, but not all of
	// now's while its visit is pending.
	seen := w.s.now + 1 - w.sweepFrom
	if w.pending {
		seen--
	}
	swept := w.sweepFrom <= w.s.now+1 && seen >= uint64(w.slots) && seen <= w.s.now+1
	return checkStore(&w.s, inCallback, func(bucket int, d, deadline uint64, postponed bool) error {
		switch {
		case postponed && deadline-d > w.mask:
			return fmt.Errorf("timer postponed in place to %d, a revolution or more after its entry's tick (store.postpone)", deadline)
		case bucket == w.firing:
			if d != w.s.now || !w.pending || postponed {
				return fmt.Errorf("firing bucket holds a timer of %d, postponed %v, now %d, pending %v", d, postponed, w.s.now, w.pending)
			}
		case w.bucketFor(d) != bucket:
			return fmt.Errorf("deadline in the wrong bucket")
		case d == w.s.now && !w.pending:
			return fmt.Errorf("timer of the current tick left without a pending advance")
		case swept && d < w.sweepMin:
			return fmt.Errorf("sweep from %d bounds deadlines by %d", w.sweepFrom, w.sweepMin)
		}
		return nil
	})
}

// nextWork is NextExpiry's answer computed the slow way: the least tick
// any entry must be visited at, which is its timer's deadline unless the
// timer was postponed in place.
func (w *Hashed[V]) nextWork() uint64 {
	least := uint64(math.MaxUint64)
	forEachEntry(&w.s, func(_ int, e *packed.Entry[V]) { least = min(least, tick(e.Deadline)) })
	return least
}

// forEachEntry calls f with every entry of s and its bucket.
func forEachEntry[V any](s *store[V], f func(bucket int, e *packed.Entry[V])) {
	for bucket := range s.entries.Buckets() {
		for es, prev := s.entries.Tail(bucket); ; es, prev = s.entries.Chunk(prev) {
			for i := range es {
				f(bucket, &es[i])
			}
			if prev == 0 {
				break
			}
		}
	}
}

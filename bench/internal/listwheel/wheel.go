// Package listwheel is a hierarchical timer wheel of the classic design,
// for bench/ to measure packwheel against: 11 levels of 64 slots, each slot
// an intrusive doubly-linked list of nodes that live in the caller's
// structs, one occupancy bitmap per level, and timers moved down a level
// as their slot comes due, so that each fires at its exact tick. It is
// written to be as fast as that design allows (no allocation, O(1)
// schedule and cancel, bitmaps to skip empty slots), since a weak baseline
// proves nothing. It places a timer by the highest base-64 digit in which
// its deadline differs from Now, as Linux and tokio do.
package listwheel

import "math/bits"

const (
	levelBits  = 6
	levelSlots = 1 << levelBits
	levels     = (64 + levelBits - 1) / levelBits
)

// Node is a timer: embed it in the struct it belongs to. The zero value is
// inactive. A Node must not be copied while active.
type Node[V any] struct {
	next, prev *Node[V]
	deadline   uint64
	slot       int32 // the slot's index plus one; 0: inactive
	value      V
}

// Active reports whether the timer is scheduled.
func (n *Node[V]) Active() bool { return n.slot != 0 }

// Deadline returns the tick the timer fires at, 0 if inactive.
func (n *Node[V]) Deadline() uint64 {
	if n.slot == 0 {
		return 0
	}
	return n.deadline
}

// Wheel is the wheel. The zero value is an empty wheel at tick 0. It is not
// safe for concurrent use.
type Wheel[V any] struct {
	now      uint64
	heads    []Node[V] // a sentinel per slot: heads[level*64+slot]
	occupied [levels]uint64
	n        int
}

func (w *Wheel[V]) ready() {
	if w.heads == nil {
		w.heads = make([]Node[V], levels*levelSlots)
		for i := range w.heads {
			w.heads[i].next, w.heads[i].prev = &w.heads[i], &w.heads[i]
		}
	}
}

// Now returns the last tick whose processing has begun.
func (w *Wheel[V]) Now() uint64 { return w.now }

// Len returns the number of active timers.
func (w *Wheel[V]) Len() int { return w.n }

// levelFor returns the level of deadline d > now: that of the highest bit
// in which they differ.
func levelFor(now, d uint64) int {
	return (63 - bits.LeadingZeros64((now^d)|(levelSlots-1))) / levelBits
}

// Schedule sets n to fire at deadline with value v; a deadline at or
// before Now fires at Now()+1. O(1).
func (w *Wheel[V]) Schedule(n *Node[V], deadline uint64, v V) {
	if n.slot != 0 {
		w.unlink(n)
	}
	w.insert(n, max(deadline, w.now+1), v)
}

// ScheduleAfter is Schedule(n, Now()+delay, v).
func (w *Wheel[V]) ScheduleAfter(n *Node[V], delay uint64, v V) {
	w.Schedule(n, w.now+delay, v)
}

// ScheduleRange sets n to fire at a tick in [earliest, latest]: it does
// nothing if n is already due in the range, and otherwise picks latest,
// which leaves the most room for later calls to be no-ops. (packwheel's
// hierarchical wheel also weighs how often a tick will move the timer
// between levels; this one does not.)
func (w *Wheel[V]) ScheduleRange(n *Node[V], earliest, latest uint64, v V) {
	if n.slot != 0 && n.deadline >= earliest && n.deadline <= latest {
		return
	}
	w.Schedule(n, latest, v)
}

// Cancel stops n and reports whether it was active. O(1).
func (w *Wheel[V]) Cancel(n *Node[V]) bool {
	if n.slot == 0 {
		return false
	}
	w.unlink(n)
	return true
}

func (w *Wheel[V]) insert(n *Node[V], d uint64, v V) {
	w.ready()
	l := levelFor(w.now, d)
	i := l<<levelBits | int(d>>(l*levelBits)&(levelSlots-1))
	h := &w.heads[i]
	n.next, n.prev = h.next, h
	h.next.prev = n
	h.next = n
	n.deadline, n.slot, n.value = d, int32(i+1), v
	w.occupied[l] |= 1 << (i & (levelSlots - 1))
	w.n++
}

func (w *Wheel[V]) unlink(n *Node[V]) {
	n.prev.next, n.next.prev = n.next, n.prev
	i := int(n.slot - 1)
	if h := &w.heads[i]; h.next == h {
		w.occupied[i>>levelBits] &^= 1 << (i & (levelSlots - 1))
	}
	var zero V
	n.next, n.prev, n.slot, n.value = nil, nil, 0, zero
	w.n--
}

// next returns the slot Advance must process next and the tick at which to
// process it: the first occupied slot of the lowest level that has one,
// whose timers all come before those of the levels above.
func (w *Wheel[V]) next() (slot int, at uint64, ok bool) {
	for l := range levels {
		occ := w.occupied[l]
		if occ == 0 {
			continue
		}
		shift := uint(l * levelBits)
		pos := int(w.now>>shift) & (levelSlots - 1)
		// Every timer of this level is in now's block of the level above,
		// so its digit is pos or later.
		i := bits.TrailingZeros64(occ >> pos)
		start := (w.now>>shift&^(levelSlots-1) + uint64(pos+i)) << shift
		return l<<levelBits | (pos + i), max(start, w.now), true
	}
	return 0, 0, false
}

// NextExpiry returns the earliest tick at which Advance has work to do, or
// limit if that is later.
func (w *Wheel[V]) NextExpiry(limit uint64) uint64 {
	if _, at, ok := w.next(); ok {
		return min(at, limit)
	}
	return limit
}

// Advance processes every tick up to to, calling expire with the value of
// each timer as it fires (a nil expire discards them). Callbacks may
// schedule and cancel any timer; they must not call Advance.
func (w *Wheel[V]) Advance(to uint64, expire func(V)) {
	for {
		i, at, ok := w.next()
		if !ok || at > to {
			break
		}
		w.now = at
		h := &w.heads[i]
		if i < levelSlots { // level 0: fire
			for h.next != h {
				n := h.next
				v := n.value
				w.unlink(n)
				if expire != nil {
					expire(v)
				}
			}
			continue
		}
		for h.next != h { // move down
			n := h.next
			d, v := n.deadline, n.value
			w.unlink(n)
			w.insert(n, d, v)
		}
	}
	w.now = max(w.now, to)
}

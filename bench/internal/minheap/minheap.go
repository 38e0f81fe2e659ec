// Package minheap is the binary-heap baseline that packwheel's wheels are
// measured against: a container/heap min-heap of deadlines with an index per
// item, the timer queue a Go programmer writes when time.Timer is not
// enough.
//
// It is as strong as container/heap allows: each entry holds its deadline
// inline, so comparisons read the heap's own array instead of chasing a
// pointer per item, and the caller's Item records the entry's position so
// that moving or cancelling a timer is one heap.Fix or heap.Remove, with no
// search. Its methods mirror packwheel's Timers API, tick semantics
// included, so that one driver runs both.
package minheap

import "container/heap"

// Item is the caller's handle on one timer, embedded by value in the struct
// the timer belongs to, like packwheel.Holder. The zero value is an inactive
// item. An Item must not be copied while active.
type Item struct {
	// index is the entry's position in the heap plus one; zero means the
	// timer is not scheduled.
	index int
}

// Active reports whether the timer is scheduled.
func (it *Item) Active() bool { return it.index != 0 }

// Heap is a min-heap of timers ordered by deadline, driven by Advance like
// packwheel's wheels. Schedule, ScheduleRange and Cancel are O(log n); each
// expiry is O(log n). The zero value is an empty heap at tick 0. It is not
// safe for concurrent use.
type Heap[V any] struct {
	now uint64
	q   queue[V]
}

// Schedule sets the timer of it to fire at deadline with value v; a
// deadline at or before Now fires at Now()+1. An active item is moved with
// heap.Fix.
func (h *Heap[V]) Schedule(it *Item, deadline uint64, v V) {
	if deadline <= h.now {
		deadline = h.now + 1
	}
	if it.index != 0 {
		e := &h.q[it.index-1]
		e.deadline, e.value = deadline, v
		heap.Fix(&h.q, it.index-1)
		return
	}
	// heap.Push would box the entry in an interface, which allocates;
	// appending and sifting the new last entry up is what it does besides.
	h.q = append(h.q, entry[V]{deadline: deadline, item: it, value: v})
	it.index = len(h.q)
	heap.Fix(&h.q, len(h.q)-1)
}

// ScheduleAfter is Schedule(it, h.Now()+delay, v).
func (h *Heap[V]) ScheduleAfter(it *Item, delay uint64, v V) {
	h.Schedule(it, h.now+delay, v)
}

// ScheduleRange sets the timer of it to fire at a tick in [earliest,
// latest]. When it is already due inside the range it only stores v;
// otherwise it schedules latest, as packwheel's hashed wheel does.
func (h *Heap[V]) ScheduleRange(it *Item, earliest, latest uint64, v V) {
	if it.index != 0 {
		if e := &h.q[it.index-1]; e.deadline >= earliest && e.deadline <= latest {
			e.value = v
			return
		}
	}
	h.Schedule(it, latest, v)
}

// Cancel stops the timer of it, reporting whether it was active.
func (h *Heap[V]) Cancel(it *Item) bool {
	if it.index == 0 {
		return false
	}
	heap.Remove(&h.q, it.index-1)
	return true
}

// Len returns the number of active timers.
func (h *Heap[V]) Len() int { return len(h.q) }

// Now returns the last tick whose processing has begun.
func (h *Heap[V]) Now() uint64 { return h.now }

// NextExpiry returns the earliest deadline, or limit if that is later.
func (h *Heap[V]) NextExpiry(limit uint64) uint64 {
	if len(h.q) == 0 {
		return limit
	}
	return min(h.q[0].deadline, limit)
}

// Advance pops and fires, in deadline order, every timer due at or before
// to, calling expire with its value while Now equals its deadline; then Now
// becomes to. Expiry callbacks may schedule and cancel timers but must not
// call Advance.
func (h *Heap[V]) Advance(to uint64, expire func(V)) {
	for len(h.q) > 0 && h.q[0].deadline <= to {
		e := h.q[0]
		h.now = e.deadline
		heap.Pop(&h.q)
		expire(e.value)
	}
	h.now = max(h.now, to)
}

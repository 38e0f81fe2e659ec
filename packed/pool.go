package packed

import (
	"slices"
	"sort"
)

// classCaps lists the least capacity of each class of arrays: 8, 12, 18,
// 27, ... Each is half again the one before, so a full array is at most a
// third slack. Arrays are made through append's growth, which rounds the
// capacity up to the allocator's size class instead of wasting the rest of
// the block, so an array's class is the last one whose least capacity it
// reaches.
var classCaps = func() []int {
	caps := []int{8}
	for c := 8; c < 1<<32; {
		c += c / 2
		caps = append(caps, c)
	}
	return caps
}()

// classOf returns the class of an array of capacity c, or -1 for none.
func classOf(c int) int { return sort.SearchInts(classCaps, c+1) - 1 }

// spareFloor is how many entries' worth of arrays the pool keeps whatever
// the number of live entries, so that a small or idle wheel does not give
// arrays to the garbage collector and take new ones back on every burst.
const spareFloor = 4096

// Pool recycles backing arrays among the buckets of one wheel and counts the
// entries they hold.
//
// Spare arrays are kept per size class. The spares' total capacity is held
// under a quarter of the live entries plus a small floor: when a burst of
// timers drains, the arrays it grew go back to the garbage collector, while a
// wheel in steady state recycles everything and allocates nothing.
//
// The zero value is an empty pool ready to use. A Pool must not be copied
// after first use.
type Pool[V any] struct {
	free  [][][]Entry[V] // free[c] holds empty arrays of capacity classCaps[c]
	spare int            // total capacity of the arrays in free
	live  int            // entries held by the buckets using this pool
}

// Live returns the number of entries held by the buckets using p. O(1).
func (p *Pool[V]) Live() int { return p.live }

// Spare returns the total capacity, in entries, of the arrays p keeps for
// reuse. O(1).
func (p *Pool[V]) Spare() int { return p.spare }

// get returns an empty array of class c.
func (p *Pool[V]) get(c int) []Entry[V] {
	if c < len(p.free) {
		if s := p.free[c]; len(s) > 0 {
			a := s[len(s)-1]
			s[len(s)-1] = nil
			p.free[c] = s[:len(s)-1]
			p.spare -= cap(a)
			return a
		}
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// put takes an empty, zeroed array back, or lets the garbage collector have
// it when it does not fit the budget. To make room it drops the largest
// spares first: the budget shrinks as timers drain, and a shrunken wheel is
// least likely to need its largest arrays again.
func (p *Pool[V]) put(a []Entry[V]) {
	budget := p.live/4 + spareFloor
	if cap(a) == 0 || cap(a) > budget {
		return
	}
	for p.spare+cap(a) > budget {
		p.dropLargest()
	}
	c := classOf(cap(a))
	for len(p.free) <= c {
		p.free = append(p.free, nil)
	}
	p.free[c] = append(p.free[c], a)
	p.spare += cap(a)
}

// dropLargest releases one of the largest spares; the pool must hold one.
func (p *Pool[V]) dropLargest() {
	for c := len(p.free) - 1; ; c-- {
		if s := p.free[c]; len(s) > 0 {
			p.spare -= cap(s[len(s)-1])
			s[len(s)-1] = nil
			p.free[c] = s[:len(s)-1]
			return
		}
	}
}

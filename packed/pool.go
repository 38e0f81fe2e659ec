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

// classFor returns the smallest class that holds n entries.
func classFor(n int) int { return sort.SearchInts(classCaps, n) }

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
	free  [][]spareArray[V] // free[c] holds class c's spares, oldest first
	spare int               // total capacity of the arrays in free
	live  int               // entries held by the buckets using this pool
	puts  uint64            // counts puts, to order spares by age
}

// spareArray is an empty array in the pool and when it arrived.
type spareArray[V any] struct {
	a  []Entry[V]
	at uint64
}

// Live returns the number of entries held by the buckets using p. O(1).
func (p *Pool[V]) Live() int { return p.live }

// Spare returns the total capacity, in entries, of the arrays p keeps for
// reuse. O(1).
func (p *Pool[V]) Spare() int { return p.spare }

// grow returns an empty array of class c or larger: the smallest spare
// that fits, or a new one of class c. Taking a larger spare lets a bucket
// that refills every rotation, as a coarse slot of a hierarchical wheel
// does, jump straight to the array the last one released instead of
// growing through every class again.
func (p *Pool[V]) grow(c int) []Entry[V] {
	for k := c; k < len(p.free); k++ {
		if len(p.free[k]) > 0 {
			return p.take(k)
		}
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// fit returns an empty array of exactly class c, spare or new, so that a
// shrinking bucket ends up smaller.
func (p *Pool[V]) fit(c int) []Entry[V] {
	if c < len(p.free) && len(p.free[c]) > 0 {
		return p.take(c)
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// take removes and returns the newest spare of class c, the likeliest to
// be in cache.
func (p *Pool[V]) take(c int) []Entry[V] {
	s := p.free[c]
	a := s[len(s)-1].a
	s[len(s)-1] = spareArray[V]{}
	p.free[c] = s[:len(s)-1]
	p.spare -= cap(a)
	return a
}

// put takes an empty, zeroed array back, or lets the garbage collector have
// it when it does not fit the budget. To make room it drops the spares that
// have waited longest: what a wheel in steady state needs comes back every
// rotation, and after a burst drains, the budget shrinks and the old spares
// go.
func (p *Pool[V]) put(a []Entry[V]) {
	budget := p.live/4 + spareFloor
	if cap(a) == 0 || cap(a) > budget {
		return
	}
	for p.spare+cap(a) > budget {
		p.dropOldest()
	}
	c := classOf(cap(a))
	for len(p.free) <= c {
		p.free = append(p.free, nil)
	}
	p.puts++
	p.free[c] = append(p.free[c], spareArray[V]{a, p.puts})
	p.spare += cap(a)
}

// dropOldest releases the spare that has waited longest; the pool must hold
// one. It is O(classes + spares of that class), and runs only when the pool
// is over budget.
func (p *Pool[V]) dropOldest() {
	oldest := -1
	for c, s := range p.free {
		if len(s) > 0 && (oldest < 0 || s[0].at < p.free[oldest][0].at) {
			oldest = c
		}
	}
	s := p.free[oldest]
	p.spare -= cap(s[0].a)
	n := copy(s, s[1:])
	s[n] = spareArray[V]{}
	p.free[oldest] = s[:n]
}

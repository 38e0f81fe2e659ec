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
// under a share of the live entries (see SpareShift) plus a small floor:
// when a burst of timers drains, the arrays it grew go back to the garbage
// collector, while a wheel in steady state recycles what it needs.
//
// The zero value is an empty pool ready to use. A Pool must not be copied
// after first use.
type Pool[V any] struct {
	// SpareShift sets the spare budget to Live()>>SpareShift entries plus a
	// small floor; zero means 2, a quarter. A wheel whose buckets fill and
	// drain in rotation needs more spares to recycle than one whose buckets
	// stay put. Set it before first use.
	SpareShift uint8

	free  []spares[V] // free[c] holds the spares of class c
	spare int         // total capacity of the arrays in free
	live  int         // entries held by the buckets using this pool
	puts  uint64      // counts puts, to order spares by age
}

// spares is a queue of one class's spare arrays, oldest first: the newest
// is reused, the oldest evicted.
type spares[V any] struct {
	q    []spareArray[V]
	head int // q[:head] are evicted slots, kept until compaction
}

func (s *spares[V]) len() int { return len(s.q) - s.head }

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

// grow returns an empty array for a bucket of n entries growing to class c:
// the smallest spare of class c or larger, or a new one of class c. A
// bucket already past jumpFrom entries may take any larger spare: that is
// how a bucket that refills every rotation, as a coarse slot of a
// hierarchical wheel does, jumps straight to the array the last one
// released instead of growing through every class again. A smaller one
// takes at most a few classes more, so it does not sit on a huge array.
func (p *Pool[V]) grow(c, n int) []Entry[V] {
	top := len(p.free)
	if n < jumpFrom {
		top = min(top, c+smallJump+1)
	}
	for k := c; k < top; k++ {
		if p.free[k].len() > 0 {
			return p.take(k)
		}
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// A bucket of fewer than jumpFrom entries grows by at most smallJump
// classes beyond the one it needs (about 3.4 times the capacity).
const (
	jumpFrom  = 1024
	smallJump = 3
)

// fit returns an empty array of exactly class c, spare or new, so that a
// shrinking bucket ends up smaller.
func (p *Pool[V]) fit(c int) []Entry[V] {
	if c < len(p.free) && p.free[c].len() > 0 {
		return p.take(c)
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// take removes and returns the newest spare of class c, the likeliest to
// be in cache.
func (p *Pool[V]) take(c int) []Entry[V] {
	s := &p.free[c]
	last := len(s.q) - 1
	a := s.q[last].a
	s.q[last] = spareArray[V]{}
	s.q = s.q[:last]
	if s.len() == 0 {
		s.q, s.head = s.q[:0], 0
	}
	p.spare -= cap(a)
	return a
}

// put takes an empty, zeroed array back, or lets the garbage collector have
// it when it does not fit the budget. To make room it drops the spares that
// have waited longest: what a wheel in steady state needs comes back every
// rotation, and after a burst drains, the budget shrinks and the old spares
// go.
func (p *Pool[V]) put(a []Entry[V]) {
	shift := p.SpareShift
	if shift == 0 {
		shift = 2
	}
	budget := p.live>>shift + spareFloor
	if cap(a) == 0 || cap(a) > budget {
		return
	}
	for p.spare+cap(a) > budget {
		p.dropOldest()
	}
	c := classOf(cap(a))
	for len(p.free) <= c {
		p.free = append(p.free, spares[V]{})
	}
	p.puts++
	p.free[c].q = append(p.free[c].q, spareArray[V]{a, p.puts})
	p.spare += cap(a)
}

// dropOldest releases the spare that has waited longest; the pool must hold
// one. It is O(classes) amortized, and runs only when the pool is over
// budget.
func (p *Pool[V]) dropOldest() {
	oldest := -1
	for c := range p.free {
		s := &p.free[c]
		if s.len() > 0 && (oldest < 0 || s.q[s.head].at < p.free[oldest].q[p.free[oldest].head].at) {
			oldest = c
		}
	}
	s := &p.free[oldest]
	p.spare -= cap(s.q[s.head].a)
	s.q[s.head] = spareArray[V]{}
	s.head++
	switch {
	case s.len() == 0:
		s.q, s.head = s.q[:0], 0
	case s.head > len(s.q)/2: // compact, paid for by the evictions since
		n := copy(s.q, s.q[s.head:])
		clear(s.q[n:])
		s.q, s.head = s.q[:n], 0
	}
}

package packwheel

import (
	"math"
	"slices"
	"sort"

	"github.com/packwheel/packwheel/packed"
)

// classCaps lists the least capacity of each class of arrays: 8, 12, 18,
// 27, ... Each is half again the one before, so a full array is at most a
// third slack. Arrays are made through append's growth, which rounds the
// capacity up to the allocator's size class instead of wasting the rest of
// the block, so an array's class is the last one whose least capacity it
// reaches.
var classCaps = func() []int {
	caps := []int{8}
	for c := 8; c < maxClassCap; {
		c += c / 2
		caps = append(caps, c)
	}
	return caps
}()

// maxClassCap bounds the classes: a Link's index is 32 bits, and on a
// 32-bit platform half of MaxInt keeps the last class from overflowing.
const maxClassCap = min(1<<32, math.MaxInt/2)

// classOf returns the class of an array of capacity c, or -1 for none.
// O(1) below smallCaps, O(log classes) above.
func classOf(c int) int {
	if uint(c) < uint(len(smallClasses)) {
		return int(smallClasses[c])
	}
	return searchClass(c)
}

// searchClass is classOf by binary search: the class list holds the least
// capacity of each class, so c's class is the last whose least is <= c.
func searchClass(c int) int { return sort.SearchInts(classCaps, c+1) - 1 }

// classFor returns the smallest class that holds n entries.
func classFor(n int) int { return classOf(n-1) + 1 }

// smallCaps bounds the capacities whose class classOf looks up in a
// table: those of the arrays a hashed wheel's buckets take and give back as
// they fill and fire, each time looking up a class, which as a binary
// search was about a twentieth of the instructions the work-unit workload
// executes over the hashed wheel (callgrind; -instructions of
// bench/cmd/report counts them). The table is 1 KB.
const smallCaps = 1024

// smallClasses[c] is the class of capacity c < smallCaps, or -1.
var smallClasses = func() (t [smallCaps]int8) {
	for c := range t {
		t[c] = int8(searchClass(c))
	}
	return t
}()

// newArray returns an empty array of class c.
func newArray[V any](c int) []packed.Entry[V] {
	return slices.Grow([]packed.Entry[V](nil), classCaps[c])
}

// shelf holds spare arrays by size class: those that buckets left as they
// grew or shrank, and the kept arrays of empty buckets given back beyond
// their budget (see store.reclaim). The newest spare of a class is reused
// first, as the likeliest to be in cache; the oldest is dropped first, as
// what a wheel in steady state needs comes back every rotation.
//
// The zero value is an empty shelf.
type shelf[V any] struct {
	free  []spares[V] // free[c] holds the spares of class c
	spare int         // total capacity of the arrays in free
	puts  uint64      // counts puts, to order spares by age
}

// spares is a queue of one class's spare arrays, oldest first.
type spares[V any] struct {
	q    []spareArray[V]
	head int // q[:head] are dropped slots, kept until compaction
}

func (s *spares[V]) len() int { return len(s.q) - s.head }

// spareArray is an empty array on the shelf and when it arrived.
type spareArray[V any] struct {
	a  []packed.Entry[V]
	at uint64
}

// take removes and returns the newest spare of class c, and reports
// whether there was one.
func (sh *shelf[V]) take(c int) ([]packed.Entry[V], bool) {
	if c >= len(sh.free) || sh.free[c].len() == 0 {
		return nil, false
	}
	s := &sh.free[c]
	last := len(s.q) - 1
	a := s.q[last].a
	s.q[last] = spareArray[V]{}
	s.q = s.q[:last]
	if s.len() == 0 {
		s.q, s.head = s.q[:0], 0
	}
	sh.spare -= cap(a)
	return a, true
}

// put shelves the empty, zeroed array a under budget, or lets the garbage
// collector have it when it does not fit, dropping the spares that have
// waited longest to make room.
func (sh *shelf[V]) put(a []packed.Entry[V], budget int) {
	if cap(a) == 0 || cap(a) > budget {
		sh.trim(budget)
		return
	}
	sh.trim(budget - cap(a))
	c := classOf(cap(a))
	for len(sh.free) <= c {
		sh.free = append(sh.free, spares[V]{})
	}
	sh.puts++
	sh.free[c].q = append(sh.free[c].q, spareArray[V]{a, sh.puts})
	sh.spare += cap(a)
}

// trim drops the spares that have waited longest until the shelf holds at
// most budget entries. Each drop is O(classes) amortized.
func (sh *shelf[V]) trim(budget int) {
	for sh.spare > budget {
		oldest := -1
		for c := range sh.free {
			s := &sh.free[c]
			if s.len() > 0 && (oldest < 0 || s.q[s.head].at < sh.free[oldest].q[sh.free[oldest].head].at) {
				oldest = c
			}
		}
		s := &sh.free[oldest]
		sh.spare -= cap(s.q[s.head].a)
		s.q[s.head] = spareArray[V]{}
		s.head++
		switch {
		case s.len() == 0:
			s.q, s.head = s.q[:0], 0
		case s.head > len(s.q)/2: // compact, paid for by the drops since
			n := copy(s.q, s.q[s.head:])
			clear(s.q[n:])
			s.q, s.head = s.q[:n], 0
		}
	}
}

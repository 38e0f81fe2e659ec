package packed

import (
	"math"
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
// table: those of the arrays a hashed wheel's slots take and give back as
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

// spareFloor is how many entries' worth of arrays the pool keeps whatever
// the number of live entries, half on each shelf, so that a small or idle
// wheel does not give arrays to the garbage collector and take new ones
// back on every burst.
const spareFloor = 4096

// Pool recycles backing arrays among the buckets of one wheel and counts the
// entries they hold.
//
// Spare arrays sit on one of two shelves, by how they came back, each with
// its own budget so that a burst that drains gives its memory back while a
// wheel in steady state recycles what it needs:
//
//   - An array left behind when a bucket grew or shrank is rarely wanted
//     again: the bucket that outgrew it is still there. Those are kept up to
//     a share of the live entries (see outgrownBudget) plus half the floor, so
//     that filling a wheel does not leave a second copy of it on the shelf,
//     plus what the latest shrinks of refilling groups went to (see
//     Bucket.ShrinkRefill), whose own arrays go where emptied ones do.
//   - An array of a bucket that emptied is what the next bucket to fill
//     wants, as when a hierarchical wheel moves a crowded coarse slot down
//     and then fills the next one, or a level-0 slot fires and its timers
//     re-arm. Those are kept up to one and a half times the live entries
//     plus half the floor: the entries that left the array still exist,
//     elsewhere in the wheel, and may come back, and an array has room for
//     up to half again its entries. When a whole wheel's timers pass
//     through the 64 slots of level 0 every 64 ticks, the arrays of all of
//     them are on the shelf at once, and a budget of the live entries alone
//     let a few go to the collector every rotation. When the entries go
//     for good, as a burst drains, the budget falls with them and the
//     shelf is cut back at the next release.
//
// The zero value is an empty pool ready to use. A Pool must not be copied
// after first use, and is not safe for concurrent use: it belongs to the
// goroutine that owns its buckets.
type Pool[V any] struct {
	// refills says a bucket has shrunk with ShrinkRefill: see
	// outgrownBudget.
	refills bool

	outgrown shelf[V]
	vacated  shelf[V]
	live     int    // entries held by the buckets using this pool
	puts     uint64 // counts puts, to order spares by age

	// heirs holds, oldest first, arrays of buckets that emptied as their
	// time came, each kept for the next bucket of its group to inherit
	// (see Bucket.Release); heirCap is their total capacity.
	heirs   []heir[V]
	heirCap int

	// shrinks holds the least capacities of the classes that the latest
	// shrinks of refilling groups went to, a ring at shrinkAt, and
	// shrinksCap their sum; see outgrownBudget.
	shrinks    [shrinkMemory]int
	shrinkAt   int
	shrinksCap int
}

// shrinkMemory is how many of the latest shrinks widen the budget of
// outgrown arrays: about two buckets' way down from a hundred thousand
// entries to a handful. With 16, the small classes at the end of one
// bucket's way down pushed the large ones out of the ring, the budget fell
// back, and the arrays the next slot needed were let go (TestCancelSteadyState
// at 100k timers allocates with 16; not with 32).
const shrinkMemory = 32

// heir is an array kept for the next bucket of a group to start filling.
type heir[V any] struct {
	a     []Entry[V]
	group int
}

// shelf holds spare arrays by size class.
type shelf[V any] struct {
	free  []spares[V] // free[c] holds the spares of class c
	spare int         // total capacity of the arrays in free
}

// spares is a queue of one class's spare arrays, oldest first: the newest
// is reused, the oldest evicted.
type spares[V any] struct {
	q    []spareArray[V]
	head int // q[:head] are evicted slots, kept until compaction
}

func (s *spares[V]) len() int { return len(s.q) - s.head }

// newest returns when the newest spare arrived, or 0 if there is none.
func (s *spares[V]) newest() uint64 {
	if s.len() == 0 {
		return 0
	}
	return s.q[len(s.q)-1].at
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
func (p *Pool[V]) Spare() int { return p.outgrown.spare + p.vacated.spare + p.heirCap }

// grow returns an empty array for a bucket of group with n entries growing
// to class c: an heir kept for group of class c or larger, else the
// smallest spare of class c or larger, else a new one of class c. An heir
// may be far larger: it is what the last bucket of the group gathered. A
// bucket already past jumpFrom entries may take any larger spare: that is
// how a bucket that refills every rotation, as a coarse slot of a
// hierarchical wheel does, jumps straight to the array the last one
// released instead of growing through every class again. A smaller one
// takes at most a few classes more, so it does not sit on a huge array.
func (p *Pool[V]) grow(c, n, group int) []Entry[V] {
	if a := p.inherit(group, classCaps[c]); a != nil {
		return a
	}
	top := max(len(p.outgrown.free), len(p.vacated.free))
	if n < jumpFrom {
		top = min(top, c+smallJump+1)
	}
	for k := c; k < top; k++ {
		if a, ok := p.take(k); ok {
			return a
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

// fit returns an empty array for a bucket of n entries shrinking to class
// c = classFor(2n): a spare of class c, else a spare of the class below,
// else a new one of class c. The class below still holds n (it is at least
// two thirds of c) and leaves the bucket between a third and three
// quarters full, so it neither grows nor shrinks again at once. A bucket
// whose size wanders around a class boundary wants the class the shelves
// have just run out of more often than the one below: with 100k timers in a
// hashed wheel, re-armed every 5000 to 10000 ticks, exact fits alone made a
// few new arrays per thousand ticks.
func (p *Pool[V]) fit(c int) []Entry[V] {
	if a, ok := p.take(c); ok {
		return a
	}
	if c > 0 {
		if a, ok := p.take(c - 1); ok {
			return a
		}
	}
	return slices.Grow([]Entry[V](nil), classCaps[c])
}

// noteShrink records that a bucket of a group whose buckets fill and drain
// in turn shrinks towards class c, the class it asks fit for (see
// outgrownBudget).
func (p *Pool[V]) noteShrink(c int) {
	p.shrinksCap += classCaps[c] - p.shrinks[p.shrinkAt]
	p.shrinks[p.shrinkAt] = classCaps[c]
	p.shrinkAt = (p.shrinkAt + 1) % shrinkMemory
}

// take removes and returns the newest spare of class c on either shelf,
// the likeliest to be in cache, and reports whether there was one.
func (p *Pool[V]) take(c int) ([]Entry[V], bool) {
	sh := &p.vacated
	if o := &p.outgrown; c < len(o.free) && (c >= len(sh.free) || o.free[c].newest() > sh.free[c].newest()) {
		sh = o
	}
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

// putOutgrown takes back the empty, zeroed array a bucket left when it
// moved to a larger or smaller one.
func (p *Pool[V]) putOutgrown(a []Entry[V]) {
	p.trimHeirs()
	p.vacated.trim(p.vacatedBudget())
	p.put(&p.outgrown, a, p.outgrownBudget())
}

// putVacated takes back the empty, zeroed array of a bucket that emptied.
func (p *Pool[V]) putVacated(a []Entry[V]) {
	p.trimHeirs()
	p.outgrown.trim(p.outgrownBudget())
	p.put(&p.vacated, a, p.vacatedBudget())
}

// outgrownBudget is a share of the live entries plus half the floor, plus
// what the latest shrinks of refilling groups went to (see
// Bucket.ShrinkRefill), up to twice the live entries. While buckets only
// grow, as when a wheel fills, what they outgrow is rarely wanted again.
// While some also shrink, as when a crowded slot drains by cancels while
// the next one fills, the arrays that one bucket outgrows on its way up
// are the ones another needs on its way down, most of a rotation later,
// and a budget of a quarter of the live entries let the larger ones go
// every time: a hierarchical wheel of 10k timers scheduled 30 s out and
// cancelled a second later allocated on every rotation
// (TestCancelSteadyState).
//
// The share is a quarter of the live entries for a pool whose buckets
// shrink as others refill, an eighth for one whose buckets stay put, which
// need fewer (TestMemoryPerTimer in the root package, hashed).
func (p *Pool[V]) outgrownBudget() int {
	shift := 3
	if p.refills {
		shift = 2
	}
	return p.live>>shift + spareFloor/2 + min(p.shrinksCap, 2*p.live)
}

func (p *Pool[V]) vacatedBudget() int { return p.live + p.live/2 + spareFloor/2 }

// put shelves a under budget, or lets the garbage collector have it when it
// does not fit. To make room it drops the spares that have waited longest:
// what a wheel in steady state needs comes back every rotation.
func (p *Pool[V]) put(sh *shelf[V], a []Entry[V], budget int) {
	if cap(a) == 0 || cap(a) > budget {
		sh.trim(budget)
		return
	}
	sh.trim(budget - cap(a))
	c := classOf(cap(a))
	for len(sh.free) <= c {
		sh.free = append(sh.free, spares[V]{})
	}
	p.puts++
	sh.free[c].q = append(sh.free[c].q, spareArray[V]{a, p.puts})
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
		case s.head > len(s.q)/2: // compact, paid for by the evictions since
			n := copy(s.q, s.q[s.head:])
			clear(s.q[n:])
			s.q, s.head = s.q[:n], 0
		}
	}
}

// maxHeirs bounds the arrays kept for the heirs of one group: a steady
// state needs one per crowded group, a second covers a slot that empties
// just before the next one starts filling, and inherit scans them all.
const maxHeirs = 2

// putHeir keeps the array of a bucket of group that emptied, for the next
// bucket of the group to start filling. A hierarchical wheel moves a
// crowded coarse slot down, or fires a crowded level-0 slot, as its time
// comes, and a hashed wheel fires a crowded bucket, while the timers that
// re-arm gather in a later slot of that level or ring, which will need as
// large an array: grown a class at a time it would cost a dozen arrays,
// and kept on a shelf with every other emptied array it could be the one
// let go. Each group keeps its own heirs, because the groups refill at
// different paces: a level-2 slot of a hierarchical wheel fills once per
// 4096 ticks while level 1 hands down an array every 64, and a cap shared
// by all would let level 1 push out the one large array that level 2
// needs. An heir pushed out by one of its own group goes to the vacated
// shelf. Heirs have a budget of their own, cut back as live entries fall;
// the shelves are cut back here too, since the last release of a burst
// that drains may be an heir's.
func (p *Pool[V]) putHeir(a []Entry[V], group int) {
	if cap(a) < jumpFrom {
		p.putVacated(a)
		return
	}
	if oldest, kept := p.heirsOf(group); kept == maxHeirs {
		p.putVacated(p.dropHeir(oldest))
	}
	p.heirs = append(p.heirs, heir[V]{a, group})
	p.heirCap += cap(a)
	p.trimHeirs()
	p.outgrown.trim(p.outgrownBudget())
	p.vacated.trim(p.vacatedBudget())
}

// inherit returns the newest array kept for group of capacity least or
// more, or nil.
func (p *Pool[V]) inherit(group, least int) []Entry[V] {
	for i := len(p.heirs) - 1; i >= 0; i-- {
		if p.heirs[i].group == group && cap(p.heirs[i].a) >= least {
			return p.dropHeir(i)
		}
	}
	return nil
}

// trimHeirs drops heirs while they hold more than twice the live entries
// plus half the floor. Twice, because live entries dip each time a crowd
// of timers fires before it re-arms, and a budget that followed the dips
// would drop the array the next crowd needs. It drops the oldest heir of a
// group that has two before any group's last one: the last is what that
// group's next bucket needs, and a slow group's heir is always the oldest.
func (p *Pool[V]) trimHeirs() {
	for p.heirCap > 2*p.live+spareFloor/2 {
		victim := 0
		for i := range p.heirs {
			if _, kept := p.heirsOf(p.heirs[i].group); kept > 1 {
				victim = i
				break
			}
		}
		p.dropHeir(victim)
	}
}

// heirsOf returns the index of group's oldest heir and how many it has.
func (p *Pool[V]) heirsOf(group int) (oldest, kept int) {
	oldest = -1
	for i := range p.heirs {
		if p.heirs[i].group == group {
			if oldest < 0 {
				oldest = i
			}
			kept++
		}
	}
	return oldest, kept
}

// dropHeir removes and returns heir i, keeping the others' order.
func (p *Pool[V]) dropHeir(i int) []Entry[V] {
	a := p.heirs[i].a
	p.heirCap -= cap(a)
	n := copy(p.heirs[i:], p.heirs[i+1:])
	p.heirs[i+n] = heir[V]{}
	p.heirs = p.heirs[:i+n]
	return a
}

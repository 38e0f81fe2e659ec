package packed

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkLinks verifies that every entry's Link records its position.
func checkLinks(t *testing.T, b *Bucket[int]) {
	t.Helper()
	for i, e := range b.Entries() {
		if e.Link.Index != uint32(i) || e.Value != int(e.Deadline) {
			t.Fatalf("entry %d: link index %d, value %d, deadline %d", i, e.Link.Index, e.Value, e.Deadline)
		}
	}
}

func TestBucketKeepsLinks(t *testing.T) {
	var p Pool[int]
	var b Bucket[int]
	links := make([]Link, 1000)
	live := map[int]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		if id := r.IntN(len(links)); !live[id] {
			b.Push(&p, uint64(id), &links[id], id)
			live[id] = true
		} else {
			i := int(links[id].Index)
			var e Entry[int]
			if r.IntN(2) == 0 {
				e = b.Remove(&p, i)
				b.Shrink(&p)
			} else {
				e = b.removeRefill(&p, i)
			}
			require.Same(t, &links[id], e.Link)
			delete(live, id)
		}
		require.Equal(t, len(live), b.Len())
		require.Equal(t, len(live), p.Live())
		checkLinks(t, &b)
	}
}

func TestRemoveClearsTail(t *testing.T) {
	var p Pool[*int]
	var b Bucket[*int]
	var links [3]Link
	x := new(int)
	for i := range links {
		b.Push(&p, 1, &links[i], x)
	}
	b.Remove(&p, 0)
	require.Nil(t, b.entries[:3][2].Value, "a removed value must not stay reachable")
	require.Nil(t, b.entries[:3][2].Link)
}

// TestShrinkHysteresis checks that a bucket that empties to a quarter gives
// memory back, and that one hovering around a size never reallocates.
func TestShrinkHysteresis(t *testing.T) {
	var p Pool[int]
	var b Bucket[int]
	links := make([]Link, 10_000)
	for i := range links {
		b.Push(&p, uint64(i), &links[i], i)
	}
	full := b.Cap()
	for b.Len() > len(links)/5 {
		b.Remove(&p, b.Len()-1)
		b.Shrink(&p)
	}
	require.Less(t, b.Cap(), full, "a mostly empty bucket keeps its memory")
	require.Less(t, b.Cap(), 4*b.Len(), "a bucket under a quarter full")
	checkLinks(t, &b)

	moves := 0
	capNow := b.Cap()
	n := b.Len()
	for range 1000 { // hover: up and down by a few entries
		for j := range 5 {
			b.Push(&p, uint64(n+j), &links[n+j], n+j)
		}
		for range 5 {
			b.Remove(&p, b.Len()-1)
			b.Shrink(&p)
		}
		if b.Cap() != capNow {
			moves++
			capNow = b.Cap()
		}
	}
	require.LessOrEqual(t, moves, 1, "a hovering bucket reallocates")
}

// TestShrinkTakesClassBelow checks that a shrinking bucket takes a spare
// of the class it wants, else of the class below, before it makes a new
// array, and never a larger one: a bucket whose size wanders otherwise
// wanted a class the shelves had just run out of while they held the one
// below.
func TestShrinkTakesClassBelow(t *testing.T) {
	const n = 10
	for _, tc := range []struct {
		name   string
		spares []int // classes relative to the wanted one
		want   int
	}{
		{"exact", []int{-1, 0, 1}, 0},
		{"below", []int{-1}, -1},
		{"larger only", []int{1, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Pool[int]
			var b Bucket[int]
			links := make([]Link, 200)
			for i := range links {
				b.Push(&p, uint64(i), &links[i], i)
			}
			for b.Len() > n {
				b.Remove(&p, b.Len()-1)
			}
			c := classFor(2 * n)
			require.Less(t, c+2, classOf(b.Cap()), "the test needs a larger bucket")
			p.outgrown, p.vacated = shelf[int]{}, shelf[int]{}
			for _, k := range tc.spares {
				p.putOutgrown(slices.Grow([]Entry[int](nil), classCaps[c+k]))
			}
			b.Shrink(&p)
			require.Equal(t, c+tc.want, classOf(b.Cap()))
			kept := len(tc.spares) + 1 // the old array joins them
			if slices.Contains(tc.spares, tc.want) {
				kept-- // and the one taken leaves
			}
			require.Equal(t, kept, p.outgrown.count(), "arrays on the shelf")
			checkLinks(t, &b)
		})
	}
}

// TestShrinkRefill checks that the array a bucket leaves by ShrinkRefill
// goes to the next bucket of its group that grows, and that Shrink's goes
// to a shelf.
func TestShrinkRefill(t *testing.T) {
	for _, refill := range []bool{false, true} {
		var p Pool[int]
		var hold, crowd, next Bucket[int]
		crowd.group, next.group = 1, 1
		links := make([]Link, 20_001)
		for i := range 10_000 { // live entries, so that budgets hold arrays
			hold.Push(&p, uint64(i), &links[i], i)
		}
		for i := 10_000; i < 20_000; i++ {
			crowd.Push(&p, uint64(i), &links[i], i)
		}
		big := crowd.Cap()
		for crowd.Len() > big/4 {
			crowd.Remove(&p, crowd.Len()-1)
		}
		if refill {
			crowd.ShrinkRefill(&p)
		} else {
			crowd.Shrink(&p)
		}
		require.Less(t, crowd.Cap(), big, "refill %v: no shrink", refill)
		_, heirs := p.heirsOf(1)
		next.Push(&p, 0, &links[20_000], 0)
		if refill {
			require.Equal(t, 1, heirs)
			require.Equal(t, big, next.Cap(), "the next bucket of the group did not inherit")
		} else {
			require.Zero(t, heirs)
			require.Less(t, next.Cap(), big)
		}
		checkLinks(t, &crowd)
	}
}

// TestShrinksWidenOutgrownBudget checks that after a bucket shrinks with
// ShrinkRefill the pool keeps outgrown arrays beyond a quarter of the live
// entries: those a bucket outgrows on its way up are what one draining
// goes down through. After a plain Shrink it does not.
func TestShrinksWidenOutgrownBudget(t *testing.T) {
	for _, refill := range []bool{false, true} {
		var p Pool[int]
		var hold, b Bucket[int]
		b.group = 1
		links := make([]Link, 50_000)
		for i := range 10_000 {
			hold.Push(&p, uint64(i), &links[i], i)
		}
		for i := 10_000; i < len(links); i++ {
			b.Push(&p, uint64(i), &links[i], i)
		}
		for b.Len() > 9_000 {
			b.Remove(&p, b.Len()-1)
		}
		before := b.Cap()
		if refill {
			b.ShrinkRefill(&p)
		} else {
			b.Shrink(&p)
		}
		require.Less(t, b.Cap(), before, "no shrink")
		// An array larger than a quarter of the live entries plus half
		// the floor, outgrown by some bucket.
		big := classFor(p.Live()/4 + spareFloor/2 + 1)
		p.outgrown, p.vacated = shelf[int]{}, shelf[int]{}
		p.putOutgrown(slices.Grow([]Entry[int](nil), classCaps[big]))
		if refill {
			require.Equal(t, 1, p.outgrown.count(), "let go after ShrinkRefill")
		} else {
			require.Zero(t, p.outgrown.count(), "kept after a plain Shrink")
		}
		checkLinks(t, &b)
	}
}

// TestPoolRecycles checks that buckets filling and draining in rotation, as
// the coarse slots of a hierarchical wheel do, allocate nothing once warm.
func TestPoolRecycles(t *testing.T) {
	var p Pool[int]
	buckets := make([]Bucket[int], 8)
	links := make([]Link, 2000)
	turn := 0
	rotate := func() {
		b := &buckets[turn%len(buckets)]
		for b.Len() > 0 {
			b.Remove(&p, b.Len()-1)
		}
		for i := range links[:1000+turn%50] {
			if links[i].Slot == 0 {
				b.Push(&p, 1, &links[i], i)
				links[i].Slot = 1
			}
		}
		next := &buckets[(turn+1)%len(buckets)]
		for next.Len() > 0 {
			e := next.Remove(&p, next.Len()-1)
			e.Link.Slot = 0
		}
		for _, e := range b.Entries() {
			e.Link.Slot = 0
		}
		turn++
	}
	for range 200 { // every size the measured turns will reach
		rotate()
	}
	require.Zero(t, testing.AllocsPerRun(100, rotate))
}

// TestPoolBudget checks that once a burst drains, the pool lets go of the
// arrays it grew, keeping at most its floor.
func TestPoolBudget(t *testing.T) {
	var p Pool[int]
	buckets := make([]Bucket[int], 64)
	links := make([]Link, 200_000)
	for i := range links {
		buckets[i%len(buckets)].Push(&p, 1, &links[i], i)
	}
	require.Equal(t, len(links), p.Live())
	require.LessOrEqual(t, p.Spare(), p.Live()/4+spareFloor/2, "arrays outgrown while filling")
	for i := range buckets {
		for buckets[i].Len() > 0 {
			buckets[i].Remove(&p, buckets[i].Len()-1)
		}
	}
	require.Zero(t, p.Live())
	require.LessOrEqual(t, p.Spare(), spareFloor, "spares kept after the burst")
}

func TestClasses(t *testing.T) {
	require.Equal(t, -1, classOf(0))
	require.Equal(t, 0, classOf(8))
	require.Equal(t, 0, classOf(11))
	require.Equal(t, 1, classOf(12))
	for c := 1; c < len(classCaps); c++ {
		require.Equal(t, classCaps[c-1]+classCaps[c-1]/2, classCaps[c])
		require.Equal(t, c, classOf(classCaps[c]))
		require.Equal(t, c-1, classOf(classCaps[c]-1))
	}
	// The table below smallCaps agrees with the search above it.
	for c := -1; c < 4*smallCaps; c++ {
		want := sort.SearchInts(classCaps, c+1) - 1
		require.Equal(t, want, classOf(c), "classOf(%d)", c)
		require.Equal(t, sort.SearchInts(classCaps, c), classFor(c), "classFor(%d)", c)
	}
}

// TestReserve checks that Reserve makes room in one move and keeps links.
func TestReserve(t *testing.T) {
	var p Pool[int]
	var b Bucket[int]
	links := make([]Link, 3000)
	b.Push(&p, 0, &links[0], 0)
	b.Reserve(&p, len(links)-1)
	c := b.Cap()
	require.GreaterOrEqual(t, c, len(links))
	for i := 1; i < len(links); i++ {
		b.Push(&p, uint64(i), &links[i], i)
	}
	require.Equal(t, c, b.Cap(), "a reserved bucket grew again")
	checkLinks(t, &b)
	b.Reserve(&p, 0)
	require.Equal(t, c, b.Cap(), "Reserve of room it has moved the bucket")
}

// TestHeirs checks that the array of a bucket emptied by Take and Release goes to
// the next bucket of its group that grows, not to another group,
// and that heirs are let go once the live entries drop.
func TestHeirs(t *testing.T) {
	var p Pool[int]
	var crowd, next, other, keep Bucket[int]
	crowd.group, next.group, other.group = 1, 1, 2
	links := make([]Link, 5000)
	for i := range links[:4000] {
		crowd.Push(&p, uint64(i), &links[i], i)
	}
	for i := 4000; i < len(links); i++ {
		keep.Push(&p, uint64(i), &links[i], i)
	}
	big := crowd.Cap()
	for crowd.Len() > 0 {
		e := crowd.removeRefill(&p, crowd.Len()-1)
		keep.Push(&p, e.Deadline, e.Link, e.Value) // the crowd moves on
	}
	require.Equal(t, big, p.Spare()-p.outgrown.spare-p.vacated.spare, "the crowd's array is kept")
	var extra [2]Link
	other.Push(&p, 0, &extra[0], 0)
	require.Less(t, other.Cap(), big, "a bucket of another group inherited")
	other.Remove(&p, other.Len()-1)
	next.Push(&p, 0, &extra[1], 0)
	require.Equal(t, big, next.Cap(), "the next bucket of the group did not inherit")
	require.Zero(t, p.heirCap)

	// Move the crowd again, then let every timer go: the heir goes too.
	for range 3000 {
		e := keep.Remove(&p, keep.Len()-1)
		next.Push(&p, e.Deadline, e.Link, e.Value)
	}
	for next.Len() > 0 {
		e := next.removeRefill(&p, next.Len()-1)
		keep.Push(&p, e.Deadline, e.Link, e.Value)
	}
	require.Equal(t, big, p.heirCap)
	for keep.Len() > 0 {
		keep.Remove(&p, keep.Len()-1)
	}
	require.Zero(t, p.heirCap, "an heir outlived the live entries")
	require.LessOrEqual(t, p.Spare(), spareFloor)
}

// TestHeirsPerGroup checks that each group keeps its own heirs: a group
// that hands down arrays often does not push out the one heir of a group
// that refills rarely, its own oldest goes to the vacated shelf instead of
// the collector, and the heir budget cuts a group's second heir before any
// group's last.
func TestHeirsPerGroup(t *testing.T) {
	var p Pool[int]
	links := make([]Link, 60_000)
	var hold Bucket[int] // keeps the live entries up while crowds move
	for i := range links {
		hold.Push(&p, 0, &links[i], i)
	}
	// crowd moves n entries into each of k buckets of group g, then
	// empties them all.
	crowd := func(g, k, n int) int {
		b := make([]Bucket[int], k)
		for i := range b {
			b[i].group = g
			for range n {
				e := hold.Remove(&p, hold.Len()-1)
				b[i].Push(&p, e.Deadline, e.Link, e.Value)
			}
		}
		c := b[0].Cap()
		for i := range b {
			for b[i].Len() > 0 {
				e := b[i].removeRefill(&p, b[i].Len()-1)
				hold.Push(&p, e.Deadline, e.Link, e.Value)
			}
		}
		return c
	}
	rare := crowd(2, 1, 20_000)
	crowd(1, 5, 2_000)
	heirs := func(g int) int { _, n := p.heirsOf(g); return n }
	require.Equal(t, []int{1, maxHeirs}, []int{heirs(2), heirs(1)}, "group 1 pushed out group 2's heir")
	require.Positive(t, p.vacated.spare, "a pushed-out heir went to the collector")

	// Let entries go until the budget is half an heir short: it cuts group
	// 1's older heir, not group 2's, though group 2's is the oldest.
	require.Equal(t, 2, p.heirs[0].group)
	live := (p.heirCap - cap(p.heirs[1].a)/2 - spareFloor/2) / 2
	for hold.Len() > live {
		hold.Remove(&p, hold.Len()-1)
	}
	hold.Shrink(&p) // heirs are cut at the next release
	require.Equal(t, []int{1, 1}, []int{heirs(2), heirs(1)})

	var b Bucket[int]
	b.group = 2
	var l Link
	b.Push(&p, 0, &l, 0)
	require.Equal(t, rare, b.Cap(), "group 2's next bucket did not inherit")
}

// TestShelves checks the two budgets: arrays outgrown while a bucket fills
// are kept up to a quarter of the live entries, arrays of emptied buckets
// up to one and a half times them.
func TestShelves(t *testing.T) {
	var p Pool[int]
	buckets := make([]Bucket[int], 40)
	links := make([]Link, 400_000)
	for i := range links {
		buckets[i%len(buckets)].Push(&p, 1, &links[i], i)
	}
	require.LessOrEqual(t, p.outgrown.spare, p.Live()/4+spareFloor/2)
	require.Zero(t, p.vacated.spare)
	// Empty a quarter of the buckets: their arrays stay on the vacated
	// shelf, which the other buckets' entries keep within budget.
	for i := range buckets[:10] {
		for buckets[i].Len() > 0 {
			buckets[i].Remove(&p, buckets[i].Len()-1)
		}
	}
	require.Positive(t, p.vacated.spare)
	require.LessOrEqual(t, p.vacated.spare, p.Live()+p.Live()/2+spareFloor/2)
	// Refill them: the vacated arrays come back, nothing is allocated.
	refill := func() {
		for i := range buckets[:10] {
			for j := range 10_000 {
				l := &links[i+40*j]
				buckets[i].Push(&p, 1, l, i)
			}
		}
		for i := range buckets[:10] {
			for buckets[i].Len() > 0 {
				buckets[i].Remove(&p, buckets[i].Len()-1)
			}
		}
	}
	refill()
	require.Zero(t, testing.AllocsPerRun(5, refill))
}

// count returns the number of arrays on the shelf.
func (sh *shelf[V]) count() int {
	n := 0
	for c := range sh.free {
		n += sh.free[c].len()
	}
	return n
}

// removeRefill removes entry i of b with Take and, if that empties b,
// gives its array back with Release: how a wheel drains a slot.
func (b *Bucket[V]) removeRefill(p *Pool[V], i int) Entry[V] {
	e := b.Take(p, i)
	if b.Len() == 0 {
		b.Release(p)
	}
	return e
}

// TestTakeKeepsArray checks that a bucket emptied by Take keeps its array,
// uncounted as spare, refills without growing, and gives the array back
// with Release; and that Release of a bucket with entries is refused.
func TestTakeKeepsArray(t *testing.T) {
	var p Pool[int]
	var b Bucket[int]
	links := make([]Link, 20)
	for i := range links {
		b.Push(&p, 0, &links[i], i)
	}
	c := b.Cap()
	require.PanicsWithValue(t, "packed: Release of a bucket that is not empty", func() { b.Release(&p) })
	require.Equal(t, len(links), b.Len(), "a refused Release changed the bucket")
	for b.Len() > 0 {
		b.Take(&p, b.Len()-1)
	}
	require.Equal(t, c, b.Cap(), "Take gave the array away")
	require.Zero(t, p.Live())
	spare := p.Spare()
	for i := range links {
		b.Push(&p, 0, &links[i], i)
	}
	require.Equal(t, c, b.Cap(), "the refill moved to another array")
	for b.Len() > 0 {
		b.Take(&p, b.Len()-1)
	}
	b.Release(&p)
	require.Zero(t, b.Cap())
	require.Equal(t, spare+c, p.Spare(), "the released array is not spare")
	b.Release(&p) // no array: nothing to do
	require.Equal(t, spare+c, p.Spare())
}

// TestPop checks that Pop takes the last entry, clears the element it
// vacates, keeps the array when the bucket empties, and counts the entry
// out of the pool.
func TestPop(t *testing.T) {
	var p Pool[int]
	var b Bucket[int]
	links := make([]Link, 10)
	for i := range links {
		b.Push(&p, uint64(i), &links[i], i)
	}
	c := b.Cap()
	for want := len(links) - 1; want >= 0; want-- {
		e := b.Pop(&p)
		require.Equal(t, want, e.Value)
		require.Same(t, &links[want], e.Link)
		require.Equal(t, want, b.Len())
		require.Equal(t, Entry[int]{}, b.entries[:want+1][want], "the vacated element still holds the entry")
		checkLinks(t, &b)
	}
	require.Zero(t, p.Live())
	require.Equal(t, c, b.Cap(), "Pop gave the array away")
	require.Panics(t, func() { b.Pop(&p) })
}

// TestAdopt checks that an empty bucket takes a kept array from another
// empty one, and that Adopt refuses, changing nothing, when either holds
// entries.
func TestAdopt(t *testing.T) {
	var p Pool[int]
	var from, to Bucket[int]
	links := make([]Link, 10)
	for i := range links {
		from.Push(&p, uint64(i), &links[i], i)
	}
	c := from.Cap()
	require.PanicsWithValue(t, "packed: Adopt between buckets that are not empty", func() { to.Adopt(&from) })
	require.Equal(t, len(links), from.Len(), "a refused Adopt changed the bucket")
	require.Zero(t, to.Cap())
	for from.Len() > 0 {
		from.Take(&p, from.Len()-1)
	}
	to.Push(&p, 0, &links[0], 0)
	require.PanicsWithValue(t, "packed: Adopt between buckets that are not empty", func() { to.Adopt(&from) })
	require.Equal(t, c, from.Cap(), "a refused Adopt moved the array")
	to.Take(&p, 0)
	to.Release(&p)
	spare := p.Spare()

	to.Adopt(&from)
	require.Equal(t, c, to.Cap())
	require.Zero(t, from.Cap())
	require.Equal(t, spare, p.Spare(), "Adopt went through the pool")
	for i := range links {
		to.Push(&p, uint64(i), &links[i], i)
	}
	require.Equal(t, c, to.Cap(), "the adopted array did not serve")
	checkLinks(t, &to)
}

// TestMakeBuckets checks that each bucket is in the group of its index,
// that a bucket's group decides which bucket inherits its array, and that
// a bad count or group size is refused with packed's message.
func TestMakeBuckets(t *testing.T) {
	bs := MakeBuckets[int](10, 4)
	for i := range bs {
		require.Equal(t, i/4, bs[i].group, "bucket %d", i)
	}
	var p Pool[int]
	links := make([]Link, 3000)
	for i := range links[:2000] {
		bs[0].Push(&p, 0, &links[i], i)
	}
	big := bs[0].Cap()
	for bs[0].Len() > 0 { // the crowd moves on, so that live entries keep the heir
		e := bs[0].Take(&p, bs[0].Len()-1)
		bs[9].Push(&p, e.Deadline, e.Link, e.Value)
	}
	bs[0].Release(&p)
	bs[4].Push(&p, 0, &links[2000], 0) // group 1
	require.Less(t, bs[4].Cap(), big, "a bucket of another group inherited")
	bs[3].Push(&p, 0, &links[2001], 0) // group 0
	require.Equal(t, big, bs[3].Cap(), "the next bucket of the group did not inherit")

	for _, c := range []struct{ n, size int }{{-1, 4}, {10, 0}, {10, -1}} {
		require.PanicsWithValue(t,
			fmt.Sprintf("packed: MakeBuckets: %d buckets in groups of %d: want n >= 0 and groupSize >= 1", c.n, c.size),
			func() { MakeBuckets[int](c.n, c.size) })
	}
	require.Empty(t, MakeBuckets[int](0, 1))
}

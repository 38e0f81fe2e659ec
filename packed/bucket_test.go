package packed

import (
	"math/rand/v2"
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
			if r.IntN(2) == 0 || i != b.Len()-1 {
				e = b.Remove(&p, i)
				b.Shrink(&p)
			} else {
				e = b.Pop(&p)
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
			b.Pop(&p)
		}
		for i := range links[:1000+turn%50] {
			if links[i].Slot == 0 {
				b.Push(&p, 1, &links[i], i)
				links[i].Slot = 1
			}
		}
		next := &buckets[(turn+1)%len(buckets)]
		for next.Len() > 0 {
			e := next.Pop(&p)
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
	require.LessOrEqual(t, p.Spare(), p.Live()/4+spareFloor)
	for i := range buckets {
		for buckets[i].Len() > 0 {
			buckets[i].Pop(&p)
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
}

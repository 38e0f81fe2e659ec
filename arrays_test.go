package packwheel

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

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

// TestKeptArrayRefills checks the request-timeout pattern's path: a bucket
// emptied by a cancel keeps its array, marked and counted, and the next
// schedule into it refills that very array without the shelf.
func TestKeptArrayRefills(t *testing.T) {
	forEachStore(t, func(t *testing.T, w Timers[*conn], s *store[*conn]) {
		var c conn
		w.Schedule(&c.timer, 100, &c)
		bucket := linkedBucket(&c.timer.link)
		array := &s.buckets[bucket].Entries()[:1][0]
		spare := s.arrays.shelf.spare
		require.True(t, w.Cancel(&c.timer))
		require.True(t, s.arrays.kept.has(bucket))
		require.Equal(t, s.buckets[bucket].Cap(), s.arrays.keptCap)
		mustCheck(t, w)

		w.Schedule(&c.timer, 100, &c)
		require.Same(t, array, &s.buckets[bucket].Entries()[0], "the bucket refilled another array")
		require.False(t, s.arrays.kept.has(bucket))
		require.Zero(t, s.arrays.keptCap)
		require.Equal(t, spare, s.arrays.shelf.spare, "the refill went through the shelf")
		mustCheck(t, w)
	})
}

// TestHeir checks that a crowd's array, kept by the coarse bucket the crowd
// moved down from, goes to the next bucket of its level that needs an
// array it holds, and not to one of another level; and that a level-0
// slot, which refills within 64 ticks, keeps its array to itself.
func TestHeir(t *testing.T) {
	w := new(Wheel[*conn])
	conns := make([]conn, 6000)
	for i := range conns {
		// Half wait: the kept arrays' budget follows the live timers.
		w.Schedule(&conns[i].timer, 100+uint64(i%2)*5000, &conns[i])
	}
	from := bucketAt(1, 1) // ticks 64 to 127
	require.Equal(t, 3000, w.s.buckets[from].Len())
	crowd := &w.s.buckets[from].Entries()[:1][0]
	w.Advance(64, nil) // moves the crowd down to level 0
	require.Same(t, crowd, &w.s.buckets[from].Entries()[:1][0], "the bucket moved down did not keep its array")

	// Level 2 is another group: its bucket grows on its own.
	w.Schedule(&conns[0].timer, 64+5000, &conns[0])
	require.Equal(t, 2, levelOf(linkedBucket(&conns[0].timer.link)))
	require.NotSame(t, crowd, &w.s.buckets[linkedBucket(&conns[0].timer.link)].Entries()[0])
	// The next bucket of level 1 to need an array inherits the crowd's.
	w.Schedule(&conns[2].timer, 64+200, &conns[2])
	to := linkedBucket(&conns[2].timer.link)
	require.Equal(t, 1, levelOf(to))
	require.Same(t, crowd, &w.s.buckets[to].Entries()[0])
	require.Zero(t, w.s.buckets[from].Cap())
	mustCheck(t, w)

	// The crowd fires from level-0 slot 36; the next slot to fill does not
	// take its array.
	w.Advance(100, nil)
	fired := &w.s.buckets[36].Entries()[:1][0]
	w.Schedule(&conns[4].timer, 101, &conns[4])
	require.NotSame(t, fired, &w.s.buckets[37].Entries()[0])
	require.Same(t, fired, &w.s.buckets[36].Entries()[:1][0])
	mustCheck(t, w)
}

// TestReclaim checks that the arrays empty buckets keep stay within their
// budget as the live timers fall, the rest going to the shelf, and that
// once every timer is gone both keep no more than their floors.
func TestReclaim(t *testing.T) {
	forEachStore(t, func(t *testing.T, w Timers[*conn], s *store[*conn]) {
		conns := make([]conn, 20_000)
		for i := range conns {
			w.Schedule(&conns[i].timer, 1+uint64(i%200), &conns[i])
		}
		for i := range conns {
			bucket := linkedBucket(&conns[i].timer.link)
			w.Cancel(&conns[i].timer)
			if s.buckets[bucket].Len() == 0 { // the budget is enforced as a bucket empties
				require.LessOrEqual(t, s.arrays.keptCap, s.keptBudget())
			}
		}
		require.LessOrEqual(t, s.arrays.spare(), keptFloor+spareFloor/2)
		mustCheck(t, w)
	})
}

// TestShelfDropsOldest checks that the shelf reuses the newest spare of a
// class and, over budget, drops the spares that waited longest.
func TestShelfDropsOldest(t *testing.T) {
	var sh shelf[int]
	a, b, c := newArray[int](0), newArray[int](0), newArray[int](1)
	sh.put(a, 100)
	sh.put(b, 100)
	got, ok := sh.take(0)
	require.True(t, ok)
	require.Equal(t, &b[:1][0], &got[:1][0], "not the newest")
	sh.put(b, 100)
	sh.put(c, cap(b)+cap(c)) // a waited longest
	require.Equal(t, cap(b)+cap(c), sh.spare)
	got, _ = sh.take(0)
	require.Equal(t, &b[:1][0], &got[:1][0])
	_, ok = sh.take(0)
	require.False(t, ok, "a was not dropped")
	sh.put(a, 1) // beyond the budget: dropped, and the shelf trimmed
	require.Zero(t, sh.spare)
}

// forEachStore runs f on both wheels, with the store each shares.
func forEachStore(t *testing.T, f func(t *testing.T, w Timers[*conn], s *store[*conn])) {
	t.Run("hashed", func(t *testing.T) {
		w := NewHashed[*conn](HashedOptions{Slots: 256})
		f(t, w, &w.s)
	})
	t.Run("wheel", func(t *testing.T) {
		w := new(Wheel[*conn])
		w.ready()
		f(t, w, &w.s)
	})
}

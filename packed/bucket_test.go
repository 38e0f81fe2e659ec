package packed

import (
	"math/rand/v2"
	"slices"
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

// grow gives a full bucket an array twice as large, as its owner would.
func grow(b *Bucket[int]) {
	if b.Len() == b.Cap() {
		b.Move(make([]Entry[int], 0, max(8, 2*b.Cap())))
	}
}

// TestBucketKeepsLinks pushes, removes and moves entries at random and
// checks after every step that each Link records its entry's position.
func TestBucketKeepsLinks(t *testing.T) {
	var b Bucket[int]
	links := make([]Link, 1000)
	live := map[int]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		switch id := r.IntN(len(links)); {
		case !live[id]:
			grow(&b)
			b.Push(uint64(id), &links[id], id)
			live[id] = true
		case r.IntN(50) == 0:
			// Move to a fresh array of just the right size.
			b.Move(make([]Entry[int], 0, b.Len()))
		default:
			e := b.Remove(int(links[id].Index))
			require.Same(t, &links[id], e.Link)
			require.Equal(t, id, e.Value)
			delete(live, id)
		}
		require.Equal(t, len(live), b.Len())
		checkLinks(t, &b)
	}
}

// TestRemoveClearsTail checks that Remove zeroes the element it vacates,
// so that a removed value does not stay reachable from the array, and
// keeps the array when the bucket empties.
func TestRemoveClearsTail(t *testing.T) {
	var b Bucket[*int]
	b.Move(make([]Entry[*int], 0, 8))
	var links [3]Link
	x := new(int)
	for i := range links {
		b.Push(1, &links[i], x)
	}
	b.Remove(0)
	require.Nil(t, b.entries[:3][2].Value, "a removed value must not stay reachable")
	require.Nil(t, b.entries[:3][2].Link)
	b.Remove(1)
	b.Remove(0)
	require.Zero(t, b.Len())
	require.Equal(t, 8, b.Cap(), "an emptied bucket keeps its array")
}

// TestPop checks that Pop takes the last entry, clears the element it
// vacates and keeps the array when the bucket empties.
func TestPop(t *testing.T) {
	var b Bucket[int]
	links := make([]Link, 10)
	for i := range links {
		grow(&b)
		b.Push(uint64(i), &links[i], i)
	}
	c := b.Cap()
	for want := len(links) - 1; want >= 0; want-- {
		e := b.Pop()
		require.Equal(t, want, e.Value)
		require.Same(t, &links[want], e.Link)
		require.Equal(t, want, b.Len())
		require.Equal(t, Entry[int]{}, b.entries[:want+1][want], "the vacated element still holds the entry")
		checkLinks(t, &b)
	}
	require.Equal(t, c, b.Cap(), "Pop gave the array away")
	require.Panics(t, func() { b.Pop() })
}

// TestPushNeedsRoom checks that Push into a full bucket panics and changes
// nothing: growing is the owner's, through Move.
func TestPushNeedsRoom(t *testing.T) {
	var b Bucket[int]
	var link Link
	require.Panics(t, func() { b.Push(1, &link, 1) })
	require.Zero(t, b.Len())
	require.Equal(t, Link{}, link)
}

// TestMove checks that Move carries the entries, with their indices, to
// the new array, hands back the old one emptied and zeroed, detaches an
// empty bucket's array with Move(nil), and refuses an array that is not
// empty or too small, changing nothing.
func TestMove(t *testing.T) {
	var b Bucket[int]
	links := make([]Link, 6)
	first := make([]Entry[int], 0, 8)
	require.Nil(t, b.Move(first))
	for i := range links {
		b.Push(uint64(i), &links[i], i)
	}
	before := slices.Clone(b.Entries())

	require.Panics(t, func() { b.Move(make([]Entry[int], 0, 5)) }, "too small")
	require.Panics(t, func() { b.Move(make([]Entry[int], 1, 20)) }, "not empty")
	require.Equal(t, before, b.Entries())

	old := b.Move(make([]Entry[int], 0, 12))
	require.Equal(t, before, b.Entries())
	require.Equal(t, 12, b.Cap())
	checkLinks(t, &b)
	require.Zero(t, len(old))
	require.Equal(t, 8, cap(old))
	require.Equal(t, make([]Entry[int], 8), old[:8], "the old array still holds entries")

	for b.Len() > 0 {
		b.Pop()
	}
	a := b.Move(nil)
	require.Equal(t, 12, cap(a))
	require.Zero(t, b.Cap(), "Move(nil) leaves an empty bucket with no array")
}

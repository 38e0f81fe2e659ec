package packed_test

import (
	"fmt"

	"github.com/packwheel/packwheel/packed"
)

// timer is a caller's struct with its Link embedded by value: the entry
// points at it, so it must stay put while linked.
type timer struct {
	name string
	link packed.Link
}

// A store removes by moving its bucket's last entry into the hole and
// rewriting that entry's Link, so every owner still finds its entry in
// O(1).
func ExampleStore_Remove() {
	var s packed.Store[*timer]
	s.Init(1)
	timers := []*timer{{name: "a"}, {name: "b"}, {name: "c"}}
	for i, t := range timers {
		s.Push(0, &t.link, uint64(10*(i+1)), t)
	}
	fmt.Println("c at index", timers[2].link.Index)

	a := timers[0]
	s.Remove(&a.link, nil) // unlinks a
	fmt.Println("removed", a.name)

	for _, t := range timers[1:] {
		e := s.Find(&t.link)
		fmt.Printf("%s at index %d, due %d\n", t.name, t.link.Index, e.Deadline)
	}
	// Output:
	// c at index 2
	// removed a
	// b at index 1, due 20
	// c at index 0, due 30
}

// A bucket's chunks grow as it fills, as the cube root of its entries, and
// an emptied chunk waits on a free list for the next bucket that needs
// one; the bucket keeps its first chunk for its next fill.
func ExampleStore_Push() {
	var s packed.Store[int]
	s.Init(2)
	links := make([]packed.Link, 100_000)
	for i := range links {
		s.Push(0, &links[i], 0, i)
		if n := i + 1; n == 10 || n == 1_000 || n == 100_000 {
			chunks, largest := 0, 0
			for es, prev := s.Tail(0); ; es, prev = s.Chunk(prev) {
				chunks, largest = chunks+1, max(largest, cap(es))
				if prev == 0 {
					break
				}
			}
			// Sizes are rounded up to the allocator's size classes:
			// these are a 64-bit platform's, with int values.
			fmt.Printf("%d entries: %d chunks, the largest of %d\n", n, chunks, largest)
		}
	}
	for !s.Empty(0) {
		s.Pop(0)
	}
	es, _ := s.Tail(0)
	fmt.Println("emptied, it keeps", cap(es))
	// Output:
	// 10 entries: 2 chunks, the largest of 8
	// 1000 entries: 36 chunks, the largest of 37
	// 100000 entries: 734 chunks, the largest of 271
	// emptied, it keeps 8
}

// TryPush pushes only into a tail chunk with room, and so can inline into
// its caller; Push, which may take a new chunk, follows when it refuses.
func ExampleStore_TryPush() {
	var s packed.Store[int]
	s.Init(1)
	links := make([]packed.Link, 10)
	for i := range links {
		if !s.TryPush(0, &links[i], 0, i) {
			fmt.Println("entry", i, "needs a new chunk")
			s.Push(0, &links[i], 0, i)
		}
	}
	fmt.Println("bucket holds", s.Len(0))
	// Output:
	// entry 0 needs a new chunk
	// entry 8 needs a new chunk
	// bucket holds 10
}

// A wheel moving a bucket's timers to other buckets reads them in place,
// pushes each where it now belongs, which relinks it, and cuts the moved
// entries from the tail chunk at once.
func ExampleStore_Cut() {
	var s packed.Store[*timer]
	s.Init(3)
	timers := []*timer{{name: "a"}, {name: "b"}, {name: "c"}}
	for i, t := range timers {
		s.Push(0, &t.link, uint64(i), t)
	}
	for !s.Empty(0) {
		es, _ := s.Tail(0)
		for i := len(es) - 1; i >= 0; i-- {
			e := &es[i]
			s.Push(1+int(e.Deadline%2), e.Link, e.Deadline, e.Value) // even to 1, odd to 2
		}
		s.Cut(0, len(es))
	}
	for b := range 3 {
		fmt.Println("bucket", b, "holds", s.Len(b))
	}
	for _, t := range timers {
		fmt.Println(t.name, "in bucket", s.BucketOf(&t.link))
	}
	// Output:
	// bucket 0 holds 0
	// bucket 1 holds 2
	// bucket 2 holds 1
	// a in bucket 1
	// b in bucket 2
	// c in bucket 1
}

// PopEach fires a bucket: it takes its entries out from the last, unlinks
// each and hands its value to f, while the last is due. f may push into
// the store, as a timer's callback re-arming it does; a later entry pushed
// into the bucket being fired stops PopEach when it comes last, and the
// caller finds the rest.
func ExampleStore_PopEach() {
	var s packed.Store[*timer]
	s.Init(2)
	timers := []*timer{{name: "a"}, {name: "b"}, {name: "c"}}
	for _, t := range timers {
		s.Push(0, &t.link, 5, t)
	}
	fired := s.PopEach(0, len(timers), 5, func(t *timer) {
		fmt.Println("fire", t.name)
		if t.name == "b" {
			s.Push(0, &t.link, 9, t) // re-armed into the same bucket
		}
	})
	es, _ := s.Tail(0)
	fmt.Println("fired", fired, "left", s.Len(0), "last due at", es[len(es)-1].Link.Deadline)
	// Output:
	// fire c
	// fire b
	// fired 2 left 2 last due at 9
}

// Release, called once per period, gives the garbage collector the free
// chunks that no bucket took during the period, but for a headroom of four
// square roots of the number the buckets did take, of each size: a wave
// of timers that returns within a period finds the chunks the last one
// left, and the memory of a burst that has drained goes back after a
// period in which no bucket needed it, but for the headroom of the first
// chunks that the emptied buckets keep.
func ExampleStore_Release() {
	var s packed.Store[int]
	s.Init(64)
	links := make([]packed.Link, 64*100)
	wave := func() {
		for i := range links {
			s.Push(i%64, &links[i], 0, i)
		}
		for b := range 64 {
			s.PopEach(b, len(links), 0, nil)
		}
	}
	report := func(when string) {
		free, released := s.Free()
		fmt.Printf("%s: %d free, %d released\n", when, free, released)
	}
	wave() // each bucket keeps its first chunk; the others are free
	report("after a wave")
	s.Release() // ends the period in which the wave took its chunks
	wave()
	report("after a wave within the next period")
	s.Release() // the second wave took them: they stay
	report("at the end of that period")
	// No bucket took any during this one: they go, but for 32 chunks of
	// 8, the headroom of the 64 first chunks the buckets keep.
	s.Release()
	report("after a period without timers")
	// Output:
	// after a wave: 513 free, 0 released
	// after a wave within the next period: 513 free, 0 released
	// at the end of that period: 513 free, 0 released
	// after a period without timers: 32 free, 481 released
}

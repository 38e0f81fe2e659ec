// The examples whose output counts chunks run on 64-bit platforms only:
// the allocator rounds a chunk's array up to its size classes, with a
// header, which differ by platform, and a chunk with more room than its
// size makes its bucket take fewer chunks.

//go:build amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x

package packed_test

import (
	"fmt"

	"github.com/packwheel/packwheel/packed"
)

// A bucket's chunks grow as it fills, as the cube root of its entries, and
// an emptied chunk waits on a free list for the next bucket that needs
// one; the bucket keeps its first chunk for its next fill.
func ExampleStore_Push() {
	var s packed.Store[int]
	s.Init(2, 0)
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
	// 10 entries: 2 chunks, the largest of 16
	// 1000 entries: 28 chunks, the largest of 74
	// 100000 entries: 554 chunks, the largest of 271
	// emptied, it keeps 8
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
	s.Init(64, 0)
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
	// No bucket took any during this one: they go, but for the 28 free
	// chunks of 8, fewer than the headroom of the 64 first chunks the
	// buckets keep (32).
	s.Release()
	report("after a period without timers")
	// Output:
	// after a wave: 354 free, 0 released
	// after a wave within the next period: 354 free, 0 released
	// at the end of that period: 354 free, 0 released
	// after a period without timers: 28 free, 326 released
}

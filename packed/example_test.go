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

// A bucket removes by swapping the last entry into the hole and rewriting
// that entry's Link.Index, so every owner still finds its entry in O(1).
// The array is the owner's to give (Move); Link.Bucket is the owner's to
// keep: here there is one bucket, number 0, recorded plus one.
func ExampleBucket_Remove() {
	var b packed.Bucket[*timer]
	b.Move(make([]packed.Entry[*timer], 0, 8))
	timers := []*timer{{name: "a"}, {name: "b"}, {name: "c"}}
	for i, t := range timers {
		b.Push(uint64(10*(i+1)), &t.link, t)
		t.link.Bucket, t.link.Deadline = 1, uint64(10*(i+1))
	}

	fmt.Println("c at index", timers[2].link.Index)

	a := timers[0]
	e := b.Remove(int(a.link.Index))
	*e.Link = packed.Link{} // a is no longer linked
	fmt.Println("removed", e.Value.name)

	for _, t := range timers[1:] {
		fmt.Printf("%s at index %d, due %d\n", t.name, t.link.Index, b.At(int(t.link.Index)).Deadline)
	}
	fmt.Println("len", b.Len(), "cap", b.Cap())
	// Output:
	// c at index 2
	// removed a
	// b at index 1, due 20
	// c at index 0, due 30
	// len 2 cap 8
}

// A full bucket grows by moving to a larger array its owner gives it; the
// old array comes back emptied, for the owner to reuse.
func ExampleBucket_Move() {
	var b packed.Bucket[int]
	links := make([]packed.Link, 3)
	b.Move(make([]packed.Entry[int], 0, 2))
	for i := range links {
		if b.Len() == b.Cap() {
			old := b.Move(make([]packed.Entry[int], 0, 2*b.Cap()))
			fmt.Println("grew from", cap(old), "to", b.Cap())
		}
		b.Push(uint64(i), &links[i], i)
	}
	fmt.Println("index of the last", links[2].Index)
	// Output:
	// grew from 2 to 4
	// index of the last 2
}

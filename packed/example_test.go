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
// Slot is the owner's to keep: here there is one bucket, number 0.
func ExampleBucket_Remove() {
	var pool packed.Pool[*timer]
	var b packed.Bucket[*timer]
	timers := []*timer{{name: "a"}, {name: "b"}, {name: "c"}}
	for i, t := range timers {
		b.Push(&pool, uint64(10*(i+1)), &t.link, t)
		t.link.Slot, t.link.Deadline = 1, uint64(10*(i+1))
	}

	fmt.Println("c at index", timers[2].link.Index)

	a := timers[0]
	e := b.Remove(&pool, int(a.link.Index))
	*e.Link = packed.Link{} // a is no longer linked
	fmt.Println("removed", e.Value.name)

	for _, t := range timers[1:] {
		fmt.Printf("%s at index %d, due %d\n", t.name, t.link.Index, b.At(int(t.link.Index)).Deadline)
	}
	fmt.Println("live", pool.Live())
	// Output:
	// c at index 2
	// removed a
	// b at index 1, due 20
	// c at index 0, due 30
	// live 2
}

// Buckets that share a Pool hand arrays to each other: the array of one
// that empties is the one the next to grow takes, so a wheel whose slots
// fill and drain in turn stops allocating.
func ExamplePool() {
	var pool packed.Pool[int]
	var first, second packed.Bucket[int]
	links := make([]packed.Link, 4)

	for i := range links {
		first.Push(&pool, 1, &links[i], i)
	}
	for first.Len() > 0 {
		first.Remove(&pool, first.Len()-1)
	}
	fmt.Println("spare after the first bucket empties:", pool.Spare())

	for i := range links {
		second.Push(&pool, 2, &links[i], i)
	}
	fmt.Println("spare after the second fills:", pool.Spare(), "live:", pool.Live())
	// Output:
	// spare after the first bucket empties: 8
	// spare after the second fills: 0 live: 4
}

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
	s.Init(1, 0)
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

// TryPush pushes only into a tail chunk with room, and so can inline into
// its caller; Push, which may take a new chunk, follows when it refuses.
func ExampleStore_TryPush() {
	var s packed.Store[int]
	s.Init(1, 0)
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
	s.Init(3, 0)
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
	s.Init(2, 0)
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

// Init's wide buckets, the first of them, take a first chunk of as many
// entries as there are wide buckets, and keep it: a bucket that fills
// with a tick's timers and fires them all, as a hierarchical wheel's
// level 0 does, then crosses no chunk boundary until they outnumber it.
// Bucket 64, not wide, takes chunks of 8, 16, 16, 16 and 16 for as many.
func ExampleStore_Init() {
	var s packed.Store[int]
	s.Init(80, 64) // buckets 0 to 63 wide, with first chunks of 64
	links := make([]packed.Link, 64)
	for _, bucket := range []int{0, 64} {
		n := 0
		for i := range links {
			if !s.TryPush(bucket, &links[i], 0, i) {
				n++
				s.Push(bucket, &links[i], 0, i)
			}
		}
		s.PopEach(bucket, len(links), 0, nil)
		fmt.Printf("bucket %d, 64 entries: chunks taken %d\n", bucket, n)
	}
	// Output:
	// bucket 0, 64 entries: chunks taken 1
	// bucket 64, 64 entries: chunks taken 5
}

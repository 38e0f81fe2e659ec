// Package packed stores timer entries by value, side by side in one slice
// per bucket, so that scanning a bucket walks contiguous memory instead of
// chasing list pointers.
//
// Each entry points back at a [Link] owned by the caller. A bucket keeps
// Link.Index equal to the entry's position: removal moves the last entry into
// the hole and rewrites the moved entry's Link, so every operation is O(1).
//
// The buckets of one wheel share a [Pool] of backing arrays. A bucket that
// empties hands its array to the pool and a bucket that grows takes one from
// it, so a wheel whose slots fill and drain in rotation (as the coarse levels
// of a hierarchical wheel do) reuses the same memory instead of allocating.
//
// The package is the storage layer of packwheel's wheels and knows nothing
// about time. Nothing in it is safe for concurrent use.
package packed

import "fmt"

// Link is the caller-owned half of an entry: where the entry lives and when
// it is due. The wheel that owns the entry writes Slot and Deadline; a
// Bucket writes Index. A Link whose Slot is zero is not linked to any entry.
//
// A Link must not be copied while linked: the entry points at the original.
// Its zero value is unlinked. Like the Bucket that points at it, it
// belongs to one goroutine.
type Link struct {
	// Deadline is the tick the entry is due at, kept here so that callers
	// can read it without touching the wheel.
	Deadline uint64
	// Slot is the owner's bucket number plus one; zero means "not linked".
	Slot uint32
	// Index is the entry's position in its bucket.
	Index uint32
}

// Entry is one timer stored inline in a bucket. Buckets hand out entries
// by value and by pointer into their arrays; such a pointer is valid until
// the bucket next changes.
type Entry[V any] struct {
	// Deadline is the tick at which the owner must look at the entry,
	// kept inline so that scanning a bucket compares deadlines without
	// following Link; the bucket itself never reads it. packwheel's wheels
	// let it be earlier than Link.Deadline: a timer pushed back in place
	// has only its Link updated, and is placed by Link.Deadline when this
	// Deadline comes.
	Deadline uint64
	// Link is the caller's Link for the entry, whose Index the bucket
	// rewrites whenever the entry moves; it is never nil in a bucket.
	Link *Link
	// Value is the caller's payload, returned when the entry is removed.
	// The bucket zeroes the element it vacates, so a removed value does
	// not stay reachable from the array.
	Value V
}

// Bucket is a packed, unordered set of entries.
//
// The zero value is an empty bucket ready to use. A Bucket must not be copied
// after first use: entries' Links record positions in this bucket's slice.
// All the buckets that share entries' Links with one wheel must use the same
// Pool. A Bucket is not safe for concurrent use: one goroutine owns it, its
// Pool and their Links.
type Bucket[V any] struct {
	entries []Entry[V]
	group   int // see MakeBuckets
}

// MakeBuckets returns n empty buckets in groups of groupSize consecutive
// ones. A group is buckets that fill and drain in turn, as a wheel's
// slots do as time passes them: Release and ShrinkRefill keep a large
// array a bucket leaves for the next bucket of its group that grows. A
// Bucket's zero value is in group 0. O(n); it panics if n < 0 or
// groupSize < 1.
func MakeBuckets[V any](n, groupSize int) []Bucket[V] {
	if n < 0 || groupSize < 1 {
		panic(fmt.Sprintf("packed: MakeBuckets: %d buckets in groups of %d: want n >= 0 and groupSize >= 1", n, groupSize))
	}
	buckets := make([]Bucket[V], n)
	for i := range buckets {
		buckets[i].group = i / groupSize
	}
	return buckets
}

// Len returns the number of entries. O(1).
func (b *Bucket[V]) Len() int { return len(b.entries) }

// Cap returns the number of entries the bucket holds without growing. O(1).
func (b *Bucket[V]) Cap() int { return cap(b.entries) }

// At returns a pointer to entry i, valid until the bucket is next changed.
// O(1). It panics if i is out of range.
func (b *Bucket[V]) At(i int) *Entry[V] { return &b.entries[i] }

// Entries returns the entries in their current order. The slice aliases the
// bucket and is valid until the bucket is next changed. O(1).
func (b *Bucket[V]) Entries() []Entry[V] { return b.entries }

// Push appends an entry and sets its Link.Index.
// O(1) amortized: when the bucket is full it moves to an array of the next
// size class, taken from p if one is spare.
func (b *Bucket[V]) Push(p *Pool[V], deadline uint64, link *Link, value V) {
	n := len(b.entries)
	if n == cap(b.entries) {
		b.grow(p)
	}
	b.entries = b.entries[:n+1]
	b.entries[n] = Entry[V]{Deadline: deadline, Link: link, Value: value}
	link.Index = uint32(n)
	p.live++
}

// grow moves a full bucket to an array of the next size class: Push's
// rare case, kept out of line so that Push's common one stays short.
func (b *Bucket[V]) grow(p *Pool[V]) {
	n := len(b.entries)
	b.move(p, p.grow(classOf(n)+1, n, b.group), noGroup)
}

// Reserve makes room for n more entries in one move, to an array of the
// class that holds them, where Push would grow through each class in turn:
// a caller about to add many entries at once saves the copies and the
// arrays in between. O(Len) when it moves.
func (b *Bucket[V]) Reserve(p *Pool[V], n int) {
	if len(b.entries)+n > cap(b.entries) {
		b.move(p, p.grow(classFor(len(b.entries)+n), len(b.entries), b.group), noGroup)
	}
}

// Remove deletes entry i and returns it. The last entry moves into the hole
// and its Link.Index is rewritten; the array goes back to p when the bucket
// empties. O(1).
func (b *Bucket[V]) Remove(p *Pool[V], i int) Entry[V] { return b.remove(p, i, noGroup) }

// Take is Remove that keeps the array when the bucket empties, for a bucket
// about to refill, as a wheel's slot does a rotation after its timers fire:
// refilling it then needs no array from p and no growth through the size
// classes. The array stays the bucket's until it is given back with
// Release; p does not count it as spare. O(1).
func (b *Bucket[V]) Take(p *Pool[V], i int) Entry[V] { return b.remove(p, i, keepArray) }

// Pop removes and returns the last entry, keeping the array when the
// bucket empties, as Take does: how a wheel fires the timers of a slot
// whose time has come. O(1). It panics if the bucket is empty.
func (b *Bucket[V]) Pop(p *Pool[V]) Entry[V] {
	last := len(b.entries) - 1
	e := b.entries[last]
	b.entries[last] = Entry[V]{}
	b.entries = b.entries[:last]
	p.live--
	return e
}

// Adopt gives the empty bucket b the array that the empty bucket from kept
// (see Take), leaving from with none: how a wheel lends the array of a
// slot that will not refill soon to one that fills now, without p. O(1).
// It panics if either bucket holds entries.
func (b *Bucket[V]) Adopt(from *Bucket[V]) {
	if len(b.entries) != 0 || len(from.entries) != 0 {
		panic("packed: Adopt between buckets that are not empty")
	}
	b.entries, from.entries = from.entries, nil
}

// Release gives the array of an empty bucket back to p. For a bucket of a
// group whose buckets empty and refill in turn, as a wheel's slots do when
// their timers fire or move down a level while the timers that re-arm
// gather in a later slot of the same group, p keeps an array of 1024
// entries or more for the next bucket of its group (see MakeBuckets) that
// grows, even beyond its usual spare budget; a smaller one
// goes back as Remove's does. It does nothing to a bucket with no array,
// and panics if the bucket is not empty. O(1) amortized.
func (b *Bucket[V]) Release(p *Pool[V]) {
	if len(b.entries) != 0 {
		panic("packed: Release of a bucket that is not empty")
	}
	if cap(b.entries) != 0 {
		p.putHeir(b.entries, b.group)
		b.entries = nil
	}
}

func (b *Bucket[V]) remove(p *Pool[V], i, heirOf int) Entry[V] {
	last := len(b.entries) - 1
	e := b.entries[i]
	if i != last {
		moved := b.entries[last]
		b.entries[i] = moved
		moved.Link.Index = uint32(i)
	}
	b.shorten(p, last, heirOf)
	return e
}

// Shrink moves a bucket left at a quarter of its capacity or less to an
// array that it half fills, so that one which stays mostly empty gives
// memory back. Buckets grow at full and shrink at a quarter, so one whose
// size hovers does not move back and forth. Call it after removals that are
// not part of draining the bucket: a bucket about to empty would copy for
// nothing. O(Len) when it moves, which the removals since have paid for;
// O(1) otherwise.
func (b *Bucket[V]) Shrink(p *Pool[V]) { b.shrink(p, noGroup) }

// ShrinkRefill is Shrink for a bucket of a group whose buckets fill and
// drain in turn, as a hierarchical wheel's coarse slots do when timers are
// cancelled before they are due: one slot drains while the next fills.
// The array it leaves, if of 1024 entries or more, is kept for the next
// bucket of its group that grows, as Release's is; a smaller one goes to
// the shelf of emptied arrays rather than that of outgrown ones. And the
// pool keeps more of the arrays that growing buckets leave, for shrinking
// ones to go down through, by as much as the last 32 such shrinks went to
// (up to twice the live entries) until later ones replace them. O(Len)
// when it moves; O(1) otherwise.
func (b *Bucket[V]) ShrinkRefill(p *Pool[V]) {
	p.refills = true
	b.shrink(p, b.group)
}

func (b *Bucket[V]) shrink(p *Pool[V], heirOf int) {
	n := len(b.entries)
	if n == 0 || n > cap(b.entries)/4 {
		return
	}
	if c := classFor(2 * n); c < classOf(cap(b.entries)) {
		if heirOf != noGroup {
			p.noteShrink(c)
		}
		b.move(p, p.fit(c), heirOf)
	}
}

// noGroup marks an array released with no heir to keep it for, and
// keepArray one that an emptied bucket keeps (see Take).
const (
	noGroup   = -1
	keepArray = -2
)

// shorten drops the tail entry, zeroing it so the array does not keep the
// value reachable, and once the bucket is empty releases the array as an
// heir of group heirOf, or to the shelf of vacated arrays for noGroup, or
// keeps it for keepArray.
func (b *Bucket[V]) shorten(p *Pool[V], last, heirOf int) {
	b.entries[last] = Entry[V]{}
	b.entries = b.entries[:last]
	p.live--
	if last == 0 && heirOf != keepArray {
		if heirOf == noGroup {
			p.putVacated(b.entries)
		} else {
			p.putHeir(b.entries, heirOf)
		}
		b.entries = nil
	}
}

// move copies the entries into fresh, which must be empty and large
// enough, and releases the old array: as an heir of group heirOf, or to the
// shelf of outgrown arrays for noGroup. Indices do not change.
func (b *Bucket[V]) move(p *Pool[V], fresh []Entry[V], heirOf int) {
	fresh = fresh[:len(b.entries)]
	copy(fresh, b.entries)
	clear(b.entries)
	if heirOf == noGroup {
		p.putOutgrown(b.entries[:0])
	} else {
		p.putHeir(b.entries[:0], heirOf)
	}
	b.entries = fresh
}

// Package packed stores timer entries by value, side by side in one slice
// per bucket, so that scanning a bucket walks contiguous memory instead of
// chasing list pointers.
//
// Each entry points back at a [Link] owned by the caller. A bucket keeps
// Link.Index equal to the entry's position: removal moves the last entry into
// the hole and rewrites the moved entry's Link, so every operation is O(1).
//
// A bucket never allocates: its owner gives it an array with room (Move)
// and takes arrays back the same way. Which array a bucket gets, and which
// it keeps when it empties, is the owner's policy: packwheel's wheels
// recycle arrays among their buckets (see policy.go in packwheel).
//
// The package is the storage layer of packwheel's wheels and knows nothing
// about time. Nothing in it is safe for concurrent use.
package packed

// Link is the caller-owned half of an entry: where the entry lives and when
// it is due. A Bucket writes Index; the owner of the buckets writes the
// rest.
//
// A Link must not be copied while linked: the entry points at the original.
// Its zero value is unlinked. Like the Bucket that points at it, it
// belongs to one goroutine.
type Link struct {
	// Deadline is the tick the entry is due at, kept here so that callers
	// can read it without touching the wheel.
	Deadline uint64
	// Bucket is the owner's number for the entry's bucket, plus one, so
	// that a zero Link is unlinked. Package packed never reads it.
	Bucket uint32
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

// Bucket is a packed, unordered set of entries in one array.
//
// The zero value is an empty bucket with no array. A Bucket must not be
// copied after first use: entries' Links record positions in this bucket's
// array. A Bucket is not safe for concurrent use: one goroutine owns it and
// its Links.
type Bucket[V any] struct {
	entries []Entry[V]
}

// Len returns the number of entries. O(1).
func (b *Bucket[V]) Len() int { return len(b.entries) }

// Cap returns the number of entries the bucket holds before it needs a
// larger array (see Move). O(1).
func (b *Bucket[V]) Cap() int { return cap(b.entries) }

// At returns a pointer to entry i, valid until the bucket is next changed.
// O(1). It panics if i is out of range.
func (b *Bucket[V]) At(i int) *Entry[V] { return &b.entries[i] }

// Entries returns the entries in their current order. The slice aliases the
// bucket and is valid until the bucket is next changed. O(1).
func (b *Bucket[V]) Entries() []Entry[V] { return b.entries }

// Push appends an entry and sets its Link.Index. O(1). The bucket must have
// room (Len < Cap): it panics, changing nothing, if it has none.
func (b *Bucket[V]) Push(deadline uint64, link *Link, value V) {
	n := len(b.entries)
	es := b.entries[:n+1]
	es[n] = Entry[V]{Deadline: deadline, Link: link, Value: value}
	b.entries = es
	link.Index = uint32(n)
}

// Remove deletes entry i and returns it: the last entry moves into the hole
// and its Link.Index is rewritten. The bucket keeps its array, even once
// empty. O(1). It panics if i is out of range.
func (b *Bucket[V]) Remove(i int) Entry[V] {
	es := b.entries
	last := len(es) - 1
	e, moved := es[i], es[last]
	es[last] = Entry[V]{}
	b.entries = es[:last]
	if i != last {
		es[i] = moved
		moved.Link.Index = uint32(i)
	}
	return e
}

// Pop removes and returns the last entry, moving no other: how a wheel
// fires the timers of a bucket whose time has come. The bucket keeps its
// array. O(1). It panics if the bucket is empty.
func (b *Bucket[V]) Pop() Entry[V] {
	last := len(b.entries) - 1
	e := b.entries[last]
	b.entries[last] = Entry[V]{}
	b.entries = b.entries[:last]
	return e
}

// Move copies the entries into to, which must be empty and have room for
// them, makes to the bucket's array, and returns the old array emptied and
// zeroed, so that it keeps no value reachable. Indices do not change. An
// empty bucket hands over its array with Move(nil) and takes one with
// Move(a). O(Len). It panics, changing nothing, if to is not empty or is
// too small.
func (b *Bucket[V]) Move(to []Entry[V]) []Entry[V] {
	if len(to) != 0 || cap(to) < len(b.entries) {
		panic("packed: Move to an array that is not empty or too small")
	}
	to = append(to, b.entries...)
	old := b.entries
	clear(old)
	b.entries = to
	return old[:0]
}

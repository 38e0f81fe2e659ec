// Package packed stores timer entries by value in buckets of chunks: short
// contiguous arrays, so that scanning a bucket walks memory in order instead
// of chasing a pointer per entry, and so that a bucket grows and shrinks
// without copying what it holds.
//
// Each entry points back at a [Link] owned by the caller, and the store
// keeps the Link told where the entry is: Link.Chunk and Link.Index name
// it, so every operation on a linked entry is O(1). Removing an entry moves
// the bucket's last entry into the hole and rewrites that entry's Link;
// exchanging two entries rewrites both.
//
// # Where entries live
//
// A bucket is a list of chunks that fills at its tail. Its first chunk holds
// MinChunk entries (a wide bucket's more, below), and each new one the largest
// doubling of MinChunk whose cube, in MinChunks, is at most eight times its
// bucket's places, also counted in MinChunks (sizeFor): 8, then 16 until the
// bucket has 64 places, 32 until 512, 64 until 4,096, and so on. A chunk's size
// so grows as the cube root of its bucket's entries: a bucket of n entries
// holds fewer spare places than its tail chunk, 8·∛n at most when it took the
// sizes it asked for, and a little more as the allocator rounds up
// (TestChunkSizes), a few for a bucket of a few and a small share of a crowded
// one; a crowded bucket is few chunks beside its entries, so that the table of
// chunks, whose row a cancel reads before its entry, stays small
// (BenchmarkChurn and BenchmarkScheduleCancel at 10M in bench/); and a bucket
// that fills and fires every tick crosses few chunk boundaries, each of which
// is a branch a processor cannot predict (bench's work units at 8,000 pairs,
// against the rule at four times, whose second chunk was of 8:
// bench/results/workunits-large.txt). A chunk that its bucket empties goes to
// the store's free list for its size, but for a bucket's first chunk, of
// MinChunk entries, which the empty bucket keeps for its next fill (a bucket
// that fills and fires every few ticks would otherwise take and give back a
// chunk each time); and a bucket that needs a chunk takes a free one before it
// allocates: of the size it needs, or else of the nearest size there is, larger
// first. A store's owner may make its first buckets wide (Init): buckets that
// fill and empty whole, over and over, as a hierarchical wheel's level 0 fills
// with a tick's timers and fires them all. A wide bucket's first chunk holds as
// many entries as there are wide buckets, and is always of that size, taken or
// made so, and kept. A tick's timers then cross no chunk boundary until they
// outnumber it, where a bucket of twenty crossed one on its fill and one on its
// fire (bench/results/wide-level0.txt); and what the wide buckets keep is a
// square fixed by the owner's shape, 4,096 entries for 64, however many timers
// pass. So timers which come and go, one at a time or in waves, reuse the same
// memory, and a wave that returns a little different from the last one finds it
// too. The store holds a few more chunks of each size than its buckets need at
// their peak, four times the square root of that need (Headroom): when it runs
// out, it allocates that many at once, and Release keeps that many. Release
// gives the garbage collector the other free chunks that no bucket took since
// the Release before; its caller calls it once per period of time, so a chunk
// unused for a whole period goes back, and a wave that returns within a period
// finds its chunks, as does one a little larger than the last. The store
// keeps 20 bytes a chunk (on a 64-bit platform: its row in the table of
// chunks, 16, and its link in a list, 4) for the most chunks it has held at
// once.
//
// The package is the storage layer of packwheel's wheels and knows nothing
// about time but for PopEach, which fires while the last entry's deadline is
// the one it is given. Nothing in it is safe for concurrent use.
package packed

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// MinChunk is the fewest entries a chunk holds; chunks hold MinChunk
// entries or a doubling of it, each array rounded up to the allocator's
// size class (newChunk), which it would waste otherwise. A bucket that is
// not wide asks for a first chunk of MinChunk entries, which it keeps
// when it empties (one that found only a larger chunk free gives that
// back): enough for the few timers that most buckets of a wheel hold at a
// time, a sparse hashed wheel's or a hierarchical wheel's above level 0, to
// come and go without taking a chunk from the free list and giving it
// back, and few enough that what empty buckets keep stays small beside the
// timers (TestMemoryPerTimer).
const MinChunk = 8

// sizes is the number of chunk sizes, MinChunk and its doublings: one
// for each size number sizeFor returns.
const sizes = 12

// lookahead is how many entries' Links PopEach touches at once, a power
// of two: enough misses in flight together to hide most of their wait,
// few enough for a processor's miss buffers (about ten or more).
const lookahead = 8

// Headroom is how many square roots of the number of chunks of a size that
// its buckets need at their peak a store keeps beyond them (headroom): in
// a steady state, the peaks of one period differ from the last's by the
// chunks that buckets' timers spilling over into one more take, and
// without headroom each new peak allocated them (TestRearmSteadyState,
// TestWavesAllocateNothingForLong). Timers spread at random over buckets
// need a number N of chunks of a size that varies from one peak to the
// next by about the square root of N, as a random count does; four of
// them are seldom exceeded, and cost little beside N once N is large: 4%
// more at 10,000 chunks. A fixed share of N, such as an eighth, is as
// much at 1,024 chunks, more above, and too little below: with it, wheels
// of a few thousand timers allocated now and then for hundreds of waves.
const Headroom = 4

// headroom returns how many free chunks of a size a store keeps beyond
// the n that its buckets needed at their peak: Headroom square roots of n.
func headroom(n int32) int32 { return int32(math.Ceil(Headroom * math.Sqrt(float64(n)))) }

// Link is the caller-owned half of an entry: where the entry lives and when
// it is due. The store writes Chunk and Index; the caller writes Deadline.
//
// A Link must not be copied while linked: the entry points at the original.
// Its zero value is unlinked. Like the store that points at it, it belongs
// to one goroutine.
type Link struct {
	// Deadline is the tick the entry is due at, kept here so that callers
	// can read it without touching the store.
	Deadline uint64
	// Chunk is the number of the entry's chunk plus one, so that a zero
	// Link is unlinked.
	Chunk uint32
	// Index is the entry's position in its chunk.
	Index uint32
}

// Entry is one timer stored inline in a chunk. A pointer to an entry is
// valid until the store next changes.
type Entry[V any] struct {
	// Deadline is the tick at which the owner must look at the entry,
	// kept inline so that scanning a bucket compares deadlines without
	// following Link; the store never reads it, and copies it with the
	// entry. packwheel's wheels let it be earlier than Link.Deadline: a
	// timer pushed back in place has its Link updated and a flag set in
	// this Deadline (a hashed wheel also moves this tick on by whole
	// revolutions), and is placed by Link.Deadline when this Deadline
	// comes.
	Deadline uint64
	// Link is the caller's Link for the entry, which the store rewrites
	// whenever the entry moves; never nil in a bucket.
	Link *Link
	// Value is the caller's payload, returned when the entry is removed.
	// The store zeroes the place an entry leaves, so that a removed value
	// does not stay reachable.
	Value V
}

// chunk is one array of a bucket's entries, or a free one.
//
// It is a row of the store's table of chunks, the row that Find and Remove
// read between a Link and its entry: 16 bytes on a 64-bit platform, a
// pointer and a count where a slice would add a capacity, and the chunk's
// place in a list kept apart (Store.prevs), which only scans, takes and
// frees read. Half the size of
// a row with both, the table takes half the cache: the hashed wheel, whose
// sparse buckets have a chunk for every few timers, re-arms and cancels
// with fewer cache misses and in less time, and the hierarchical wheel as
// before (BenchmarkChurn and BenchmarkScheduleCancel in bench/, and
// cachegrind's counts: bench/results/chunk-row.txt).
type chunk[V any] struct {
	// base is the first entry of the chunk's whole array of n, its size,
	// and nil, with n 0, once the array went back to the garbage
	// collector. Which of a tail chunk's places are in use its bucket's
	// live says; the others are zero, as are all of a free chunk's.
	base *Entry[V]
	n    uint32
	// bucket is the bucket the chunk belongs to, or -1 while it is free.
	bucket int32
}

// array returns the chunk's whole array, nil once it went back (a nil
// base and a count of 0, which unsafe.Slice makes nil).
func (ch *chunk[V]) array() []Entry[V] { return unsafe.Slice(ch.base, ch.n) }

// freeList is a stack of free chunks of one size, linked through Store.prevs,
// and the count of all chunks of that size.
type freeList struct {
	top   uint32 // the chunk on top, plus one; 0 when empty
	n     int32  // chunks on the list
	low   int32  // the fewest chunks on the list since the last Release
	total int32  // chunks of this size with an array: on the list or in a bucket
}

// Store is a set of buckets of entries and the chunks they live in.
//
// Its invariants, which Check verifies:
//
//	every chunk of a bucket but its tail is full, and none is empty but
//	    the first chunk, of MinChunk entries, that an empty bucket keeps,
//	    or of wide entries in a wide bucket, whose first chunk is of that
//	    size whenever it has one
//	bucket.units counts the places of its chunks, in MinChunks, each at its size
//	bucket.live is the tail chunk's array up to its last entry, nil for
//	    no tail; the places after it, and all a free chunk's, are zero
//	len counts the entries of all buckets
//	occupied has the bit of every bucket with entries, and no other
//	every chunk belongs to exactly one bucket, one free list or the blanks;
//	    its row names its array, of n entries, but for a blank's: nil and 0
//	entry i of chunk c: e.Link.Chunk == c+1, e.Link.Index == i
//	freeList.n counts its chunks, low <= n, and total counts the chunks of
//	    its size in buckets and on it
//
// The zero value has no buckets; Init makes them. A Store must not be
// copied after first use: Links record positions in its chunks. It is not
// safe for concurrent use.
type Store[V any] struct {
	buckets []bucket[V]
	// occupied has bit b%64 of word b/64 set when bucket b holds entries,
	// for its owner to find the next bucket to visit (Occupied).
	occupied []uint64
	len      int // entries in all buckets
	chunks   []chunk[V]
	// prevs[c-1] is the number, plus one, of the chunk before chunk c in
	// its bucket, or of the next chunk on its free list or among the
	// blanks; 0 for none.
	prevs  []uint32
	free   [sizes]freeList
	blanks uint32 // the chunks whose arrays went back, linked through prevs
	nblank int
	// wide is the number of wide buckets, 0 to wide-1, and the entries of
	// their first chunks (Init); wideSize is that chunk's size number.
	wide     int
	wideSize int
}

// bucket is where a bucket's chunks end. It keeps no count of its
// entries: by the invariants its live entries are empty only when it holds
// none, which is all the store and a wheel need to know (Empty), and a
// count kept beside them cost a store in every push and removal
// (BenchmarkScheduleCancel and BenchmarkExpire in bench/).
type bucket[V any] struct {
	// live is the entries of the tail chunk: its array up to the
	// bucket's last entry. Kept here, beside tail, so that pushing or
	// taking out a bucket's last entry reads and writes no chunk, whose
	// own slice, its whole array, stays as it is (BenchmarkExpire and
	// BenchmarkScheduleCancel in bench/, which push and take out an
	// entry or more per op).
	live []Entry[V]
	tail uint32 // its last chunk plus one; 0 for none
	// units is how many places the bucket's chunks hold, in MinChunks
	// (each chunk counted at its size, not its array's rounded-up
	// capacity), which sets the size of its next chunk (sizeFor) and says
	// whether its tail is the first chunk it keeps when it empties
	// (keeps). It is kept here, in what would be the struct's padding, so
	// that a bucket that empties tells whether it keeps its chunk from the
	// bucket it has just written, reading no chunk (bench's work units, in
	// which nearly every firing empties a bucket).
	units uint32
}

// Init makes n empty buckets, numbered 0 to n-1, and forgets any
// entries. The first wide of them are wide: the first chunk of each, which
// it keeps, holds wide entries rather than MinChunk (see Where entries
// live). n must be from 0 to 2^31-1, and wide 0 or a chunk's size,
// MinChunk or a doubling of it, and at most n; Init panics otherwise,
// before it changes anything. An emptied bucket keeps its first chunk, so
// the buckets keep (n-wide)·MinChunk + wide² entries at most. O(n).
func (s *Store[V]) Init(n, wide int) {
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("packed: %d buckets; want 0 to %d", n, math.MaxInt32))
	}
	size := max(sizeOf(wide), 0)
	if wide != 0 && (wide > n || wide < MinChunk || size >= sizes || wide != MinChunk<<size) {
		panic(fmt.Sprintf("packed: %d wide buckets of %d; want 0, or a power of two from %d to %d and at most the buckets", wide, n, MinChunk, MinChunk<<(sizes-1)))
	}
	*s = Store[V]{buckets: make([]bucket[V], n), occupied: make([]uint64, (n+63)/64), wide: wide, wideSize: size}
}

// Buckets returns the number of buckets. O(1).
func (s *Store[V]) Buckets() int { return len(s.buckets) }

// Empty reports whether bucket holds no entries: whether its tail chunk
// holds none, as no other chunk of a bucket is ever empty. O(1).
func (s *Store[V]) Empty(bucket int) bool { return len(s.buckets[bucket].live) == 0 }

// Len returns the number of entries in bucket. O(chunks of bucket): a
// bucket keeps no count, as its tail chunk's live entries say whether it
// is empty, which is all a wheel asks.
func (s *Store[V]) Len(bucket int) int {
	es, prev := s.Tail(bucket)
	n := len(es)
	for prev != 0 {
		es, prev = s.Chunk(prev)
		n += len(es)
	}
	return n
}

// Entries returns the number of entries in all buckets. O(1).
func (s *Store[V]) Entries() int { return s.len }

// Occupied returns the store's occupancy bitmap: bit b%64 of word b/64 is
// set when bucket b holds entries. The slice aliases the store's, which
// keeps it up to date; it must not be written. O(1).
func (s *Store[V]) Occupied() []uint64 { return s.occupied }

// Push appends an entry due at deadline to bucket and links it: Link
// records where it is and the deadline. O(1); it allocates only when the
// bucket needs a new chunk and no free one is left.
func (s *Store[V]) Push(bucket int, link *Link, deadline uint64, v V) {
	if !s.TryPush(bucket, link, deadline, v) {
		s.pushChunk(bucket, link, deadline, v)
	}
}

// TryPush is Push into a bucket whose tail chunk has room, which it
// reports true for; into any other it changes nothing and reports false,
// and Push pushes. It is small enough to inline (TestInlining), which Push,
// with its call for a new chunk, is not: a caller that writes
// "if !s.TryPush(...) { s.Push(...) }" pays no call for the common case,
// as a wheel's Schedule and its moves down a level do (BenchmarkExpire and
// BenchmarkScheduleCancel in bench/). O(1); it never allocates.
func (s *Store[V]) TryPush(bucket int, link *Link, deadline uint64, v V) bool {
	b := &s.buckets[bucket]
	n := len(b.live)
	if n == cap(b.live) {
		return false
	}
	b.live = b.live[:n+1] // a store of the length alone
	b.live[n] = Entry[V]{Deadline: deadline, Link: link, Value: v}
	*link = Link{Deadline: deadline, Chunk: b.tail, Index: uint32(n)}
	s.len++
	if n == 0 {
		s.occupied[bucket>>6] |= 1 << (bucket & 63)
	}
	return true
}

// pushChunk is Push into a bucket whose tail is full or which has none: it
// gives the bucket a new tail chunk, of the next size, and pushes there.
func (s *Store[V]) pushChunk(bucket int, link *Link, deadline uint64, v V) {
	b := &s.buckets[bucket] // s.buckets never grows; s.chunks may, in take
	t := b.tail
	// Of the size the bucket's places set (Where entries live): counted
	// in the bucket, not summed over its chunks' rows in the table of
	// chunks, which a bucket that fills and fires every few ticks has not
	// read since it last took a chunk (bench's work units at 8,000 pairs).
	size := sizeFor(b.units)
	if b.units > math.MaxUint32-1<<(sizes-1) { // what the largest chunk adds
		panic(fmt.Sprintf("packed: bucket %d holds %d places; a bucket holds fewer than %d", bucket, uint64(b.units)*MinChunk, uint64(math.MaxUint32)*MinChunk))
	}
	var c uint32
	if b.units == 0 && bucket < s.wide {
		// Of its size, made if none is free: the bucket keeps it for
		// good (keeps), which only a chunk of that size tells.
		c = s.take(s.wideSize)
	} else {
		c = s.take(s.nearestFree(size))
	}
	ch := &s.chunks[c-1]
	ch.bucket, s.prevs[c-1] = int32(bucket), t
	es := ch.array()
	es[0] = Entry[V]{Deadline: deadline, Link: link, Value: v}
	*link = Link{Deadline: deadline, Chunk: c, Index: 0}
	b.tail, b.live = c, es[:1]
	b.units += 1 << sizeOf(len(es))
	s.len++
	if t == 0 {
		s.occupied[bucket>>6] |= 1 << (bucket & 63)
	}
}

// sizeOf returns the size number of a chunk of capacity c: 0 for
// MinChunk, one more for each doubling.
func sizeOf(c int) int { return bits.Len(uint(c/MinChunk)) - 1 }

// sizeFor returns the size number of the next chunk of a bucket whose
// chunks hold u MinChunks: the largest j with (2^j)³ <= 8u, so that a
// chunk holds at most 2·∛u MinChunks, and more than half that; 0 for an
// empty bucket.
func sizeFor(u uint32) int { return (bits.Len32(u) + 2) / 3 }

// nearestFree returns the size number nearest to size, larger first, whose
// free list holds a chunk, or size if none does.
func (s *Store[V]) nearestFree(size int) int {
	for k := size; k < sizes; k++ {
		if s.free[k].top != 0 {
			return k
		}
	}
	for k := size - 1; k >= 0; k-- {
		if s.free[k].top != 0 {
			return k
		}
	}
	return size
}

// take returns a free chunk of the given size number, the one on top of
// its free list; if there is none, it first makes one and its headroom.
func (s *Store[V]) take(size int) uint32 {
	f := &s.free[size]
	if f.top == 0 {
		more := 1 + headroom(f.total)
		for range more {
			s.putFree(size, s.newChunk(size))
		}
		f.total += more
	}
	c := f.top
	f.top = s.prevs[c-1]
	f.n--
	f.low = min(f.low, f.n)
	return c
}

// newChunk returns a chunk, blank or new, with a new array of the given
// size number.
func (s *Store[V]) newChunk(size int) uint32 {
	c := s.blanks
	if c != 0 {
		s.blanks = s.prevs[c-1]
		s.nblank--
	} else {
		s.chunks = append(s.chunks, chunk[V]{})
		s.prevs = append(s.prevs, 0)
		c = uint32(len(s.chunks))
	}
	// Rounded up to the allocator's size class, which would be wasted
	// otherwise: the capacity stays below the next size's.
	es := slices.Grow([]Entry[V](nil), MinChunk<<size)
	es = es[:cap(es)]
	s.chunks[c-1].base, s.chunks[c-1].n = &es[0], uint32(len(es))
	return c
}

// Find returns the entry that link names, if that entry points back at
// link; else nil: the link is unlinked, names a place this store does not
// have, or was copied, belongs to another store or was overwritten. O(1),
// and small enough to inline.
func (s *Store[V]) Find(link *Link) *Entry[V] {
	// Unsigned comparisons, so that a corrupted number of 2^31 or more,
	// negative as an int on a 32-bit platform, is refused too; an unlinked
	// Chunk of 0 wraps to the largest. The entry is Index entries after
	// its chunk's base, which the Index check keeps within the chunk's
	// array: an unsafe.Add that the race detector's pointer checks verify
	// (TestFindRefuses, and TestMisuseHolders, whose overwritten holder
	// names an index past its chunk).
	if c := uint(link.Chunk - 1); c < uint(len(s.chunks)) {
		if ch := &s.chunks[c]; link.Index < ch.n {
			if e := (*Entry[V])(unsafe.Add(unsafe.Pointer(ch.base), uintptr(link.Index)*unsafe.Sizeof(*ch.base))); e.Link == link {
				return e
			}
		}
	}
	return nil
}

// BucketOf returns the bucket of the entry that link names, which Find
// must have found. O(1).
func (s *Store[V]) BucketOf(link *Link) int { return int(s.chunks[link.Chunk-1].bucket) }

// Remove deletes the entry that link names, unlinks link and reports
// true, if that entry points back at link, as Find would find it; else it
// changes nothing and reports false. The bucket's last entry moves into
// the hole and its Link is rewritten. A caller that wants the entry reads
// it first. O(1). It makes Find's check itself, rather than trusting a
// Find before it, so that a cancel looks its chunk up once
// (BenchmarkScheduleCancel in bench/).
//
// If link is linked but names no entry that points back at it (it was
// copied, belongs to another store or was overwritten), Remove calls
// foreign, if not nil, with link as it is, before it reports false:
// foreign is the caller's report of the misuse, made from inside the call
// so that a caller that cancels stays small enough to inline into its own
// callers (packwheel's TestInlining).
func (s *Store[V]) Remove(link *Link, foreign func(Link)) bool {
	// Find's lookup, written out so that the bucket comes from the row it
	// has read: through Find, Remove read the row a second time, a cost
	// to every cancel (BenchmarkScheduleCancel in bench/), and Find
	// cannot return the row too and stay inlinable into locate, whose
	// budget it spends to the last unit (TestInlining;
	// bench/results/remove-row.txt).
	var e *Entry[V]
	var ch *chunk[V]
	if c := uint(link.Chunk - 1); c < uint(len(s.chunks)) {
		if ch = &s.chunks[c]; link.Index < ch.n {
			e = (*Entry[V])(unsafe.Add(unsafe.Pointer(ch.base), uintptr(link.Index)*unsafe.Sizeof(*ch.base)))
		}
	}
	if e == nil || e.Link != link {
		if link.Chunk != 0 && foreign != nil {
			foreign(*link)
		}
		return false
	}
	bucket := int(ch.bucket)
	b := &s.buckets[bucket]
	es := b.live
	last := len(es) - 1
	// The counts, and the chunk's freeing, before the entries are
	// written: a store of an entry, which holds pointers, is a write
	// barrier's test and call, and what is still needed after it the
	// compiler keeps on the stack, on every call. Done last, the counts
	// kept several values there (BenchmarkScheduleCancel in bench/, a
	// cancel per op).
	b.live = b.live[:last]
	s.len--
	if last == 0 {
		s.dropTail(bucket, b)
	}
	// The bucket's last entry is the one removed when it links back to
	// link, as no other entry does; es keeps its array when its chunk is
	// freed. Moving it onto itself without the test spared a hashed
	// wheel's sparse buckets a mispredicted branch but cost a cancel of
	// the timer just scheduled, a request's timeout, more than that
	// (BenchmarkRequestTimeout; bench/results/remove-branch.txt).
	if moved := &es[last]; moved.Link != link {
		*e = *moved
		moved.Link.Chunk, moved.Link.Index = link.Chunk, link.Index
	}
	es[last] = Entry[V]{}
	*link = Link{}
	return true
}

// Exchange swaps the places of entries a and b, which must be in the
// store, and rewrites their Links: how a wheel brings the entries due in
// a bucket to its end, where PopEach takes them, without moving them to
// another bucket. O(1).
func (s *Store[V]) Exchange(a, b *Entry[V]) {
	la, lb := a.Link, b.Link
	*a, *b = *b, *a
	la.Chunk, la.Index, lb.Chunk, lb.Index = lb.Chunk, lb.Index, la.Chunk, la.Index
}

// Pop removes and returns the last entry of bucket, which must not be
// empty, moving no other: how a wheel takes the entries of a bucket whose
// time has come. O(1). Its body is Remove's counts, freeing and clearing
// without the hole, written out rather than shared: a helper holding it,
// with its call to dropTail, does not inline (go build -gcflags=-m=2: cost
// 102, budget 80), and Remove, every cancel's path, would pay a call for
// it.
func (s *Store[V]) Pop(bucket int) Entry[V] {
	b := &s.buckets[bucket]
	last := len(b.live) - 1
	e := b.live[last]
	b.live[last] = Entry[V]{}
	b.live = b.live[:last]
	s.len--
	if last == 0 {
		s.dropTail(bucket, b)
	}
	return e
}

// Cut removes the last n entries of bucket's tail chunk, which must hold
// that many, without touching their Links: for a caller that has pushed
// each of them to another bucket, which linked it there, reading them in
// place (Tail, Chunk) rather than popping one at a time, as a wheel moving
// a bucket's timers down a level does. It clears their places, as Pop
// does, and frees the chunk if it empties, as Pop would. O(n).
func (s *Store[V]) Cut(bucket, n int) {
	b := &s.buckets[bucket]
	last := len(b.live) - n
	clear(b.live[last:])
	b.live = b.live[:last]
	s.len -= n
	if last == 0 {
		s.dropTail(bucket, b)
	}
}

// PopEach takes the entries of bucket out from the last, one at a time,
// unlinks each and calls f with its value, while the last entry's
// Link.Deadline is due, and until the bucket is empty or n entries have
// gone; it returns how many went: how a wheel fires the timers of a bucket
// whose time has come. f may change the store, the bucket included; an
// entry it removes does not come out here, and one it adds or gives a
// later Link.Deadline stops PopEach when it comes last, so that a wheel
// firing a bucket where it is fires no timer early. A nil f discards the
// values. O(1) per entry.
func (s *Store[V]) PopEach(bucket, n int, due uint64, f func(V)) int {
	b := &s.buckets[bucket] // s.buckets never grows; s.chunks may, in f
	i := 0
	for ; i < n && len(b.live) != 0; i++ {
		es := b.live
		last := len(es) - 1
		if i == 0 || last&(lookahead-1) == lookahead-1 {
			// Each Link is in the caller's memory, cold at scale, and
			// beside what f will read of its value. Touching a group
			// of them at once puts their misses in flight together:
			// one wait per group, where firing one by one waited for
			// each, as a linked list's walk avoids by reading its next
			// node. The nil checks are the loads. Touching only the
			// next entry's Link made BenchmarkExpire, whose f reads
			// nothing, wait for each; an assembly prefetch cost a call
			// per entry where nothing misses (bench's work units at
			// 1,000 and 32,000 pairs: bench/results/workunits-large.txt).
			// Not past the n-i entries that may go: those below, not
			// due, are a hashed wheel's cold timers of later revolutions
			// (bench's work units at 8,000 pairs took 1.20 times as long
			// touching them). Skipped in the group rather than sliced
			// off it, which the compiler checks at a cost of 3% of the
			// hierarchical wheel's work-unit instructions (callgrind).
			group := es[last&^(lookahead-1) : last+1]
			for k := max(0, len(group)-(n-i)); k < len(group); k++ {
				_ = *group[k].Link
			}
		}
		e := &es[last]
		link := e.Link
		if link.Deadline != due {
			break
		}
		b.live = b.live[:last]
		s.len--
		if last == 0 {
			// dropTail, written out: a bucket of a few timers that fires
			// empties its first chunk at nearly every one.
			if !s.keeps(bucket, b) {
				s.freeTail(b)
			}
			if len(b.live) == 0 {
				s.emptied(bucket)
			}
		}
		// The counts first, as in Remove: the clearing's write barrier
		// then keeps nothing on the stack but what f needs.
		v := e.Value
		*e = Entry[V]{}
		*link = Link{}
		if f != nil {
			f(v)
		}
	}
	return i
}

// dropTail is what Remove, Pop, Cut and PopEach do when they empty the
// tail chunk of bucket b: the chunk goes to its free list, unless it is the
// first chunk that the bucket keeps (keeps); the
// bucket, if that leaves it empty, leaves the occupancy bitmap.
func (s *Store[V]) dropTail(bucket int, b *bucket[V]) {
	if !s.keeps(bucket, b) {
		s.freeTail(b)
	}
	if len(b.live) == 0 {
		s.emptied(bucket)
	}
}

// keeps reports whether bucket b keeps its tail chunk when that chunk
// empties: whether it is b's only chunk and of MinChunk entries, its
// units 1, or, for a wide bucket, of wide entries. A wide bucket's first
// chunk is always of wide entries (pushChunk), so that units which say
// that size say that chunk alone; another bucket's first chunk may be
// larger than MinChunk. The rule's one statement on the paths that empty
// a chunk, PopEach and dropTail; Check states it again from the chunks,
// not from b.units, which it verifies. Small enough to inline into
// PopEach's loop.
func (s *Store[V]) keeps(bucket int, b *bucket[V]) bool {
	return b.units == 1 || bucket < s.wide && b.units == 1<<s.wideSize
}

// emptied clears the occupancy bit of bucket, which has just emptied.
func (s *Store[V]) emptied(bucket int) { s.occupied[bucket>>6] &^= 1 << (bucket & 63) }

// freeTail puts b's emptied tail chunk on its free list; the chunk before
// it, full, becomes the tail.
func (s *Store[V]) freeTail(b *bucket[V]) {
	t := b.tail
	ch := &s.chunks[t-1]
	size := sizeOf(int(ch.n))
	prev := s.prevs[t-1]
	b.tail, b.live = prev, nil
	b.units -= 1 << size
	if prev != 0 {
		b.live = s.chunks[prev-1].array()
	}
	s.putFree(size, t)
}

// putFree puts the empty chunk c on the free list of its size number.
func (s *Store[V]) putFree(size int, c uint32) {
	f := &s.free[size]
	ch := &s.chunks[c-1]
	ch.bucket, s.prevs[c-1] = -1, f.top
	f.top = c
	f.n++
}

// Release gives the garbage collector the arrays of the free chunks that
// no bucket took since the Release before (on each free list, the fewest
// it held in the meantime), beyond the headroom of those the buckets took
// at their peak, and starts a new period. Called once per period, it lets a
// chunk stay unused for between one and two periods. O(free chunks).
func (s *Store[V]) Release() {
	for size := range s.free {
		f := &s.free[size]
		unused := max(0, f.low-headroom(f.total-f.low))
		if unused == 0 {
			f.low = f.n
			continue
		}
		// The list is newest first: those freed during the period, which
		// stay, are above the unused ones, which go from the bottom.
		next := &f.top
		for range f.n - unused {
			next = &s.prevs[*next-1]
		}
		for c := *next; c != 0; {
			ch := &s.chunks[c-1]
			c, ch.base, ch.n, s.prevs[c-1], s.blanks = s.prevs[c-1], nil, 0, s.blanks, c
			s.nblank++
		}
		*next = 0
		f.n -= unused
		f.total -= unused
		f.low = f.n
	}
}

// Tail returns the entries of bucket's last chunk, where a scan of the
// bucket, last entry first, starts, and the number of the chunk before it,
// 0 if there is none. The slice aliases the chunk and is valid until the
// store next changes. O(1).
func (s *Store[V]) Tail(bucket int) (entries []Entry[V], prev uint32) {
	b := &s.buckets[bucket]
	if b.tail == 0 {
		return nil, 0
	}
	return b.live, s.prevs[b.tail-1]
}

// Chunk returns the entries of chunk c, a number Tail or Chunk returned as
// prev, and the number of the chunk before it in its bucket, 0 at the
// first. Such a chunk is full. The slice aliases the chunk and is valid
// until the store next changes. O(1).
func (s *Store[V]) Chunk(c uint32) (entries []Entry[V], prev uint32) {
	return s.chunks[c-1].array(), s.prevs[c-1]
}

// Free returns the number of free chunks, and the number of chunks whose
// arrays went back to the garbage collector. O(1).
func (s *Store[V]) Free() (free, released int) {
	for _, f := range s.free {
		free += int(f.n)
	}
	return free, s.nblank
}

package packed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreRandom pushes, removes, pops one at a time or as a wheel fires
// (PopEach, while the last entry is due), moves and releases at random
// over a few busy buckets and many quiet ones, in phases that fill and
// drain, against a model of which bucket each link is in and of when each
// chunk was last freed, and checks every invariant after every step: a
// chunk goes back to the garbage collector only after a whole period free,
// and a new array is made only when no chunk of any size is free.
func TestStoreRandom(t *testing.T) {
	seed := rand.Uint64()
	if env := os.Getenv("SEED"); env != "" {
		var err error
		if seed, err = strconv.ParseUint(env, 10, 64); err != nil {
			t.Fatalf("SEED=%q: %v", env, err)
		}
	}
	t.Logf("seed %d (replay with SEED=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	var s Store[int]
	s.Init(48, 0)
	// pick returns a bucket: one of the first five, busy, but now and
	// then any, so that new buckets keep needing a first chunk while
	// larger ones are free, as a wheel's do when its timers move on.
	pick := func() int {
		if r.IntN(16) == 0 {
			return r.IntN(s.Buckets())
		}
		return r.IntN(5)
	}
	links := make([]Link, 2000)
	in := make([]int, len(links)) // bucket+1, 0 when unlinked
	count := make([]int, s.Buckets())
	// An entry's Deadline is its id modulo 3, with the top bit set in
	// some, as a wheel flags a timer postponed in place: the store must
	// carry it with the entry, bit for bit, wherever the entry moves.
	flagged := make([]bool, len(links))
	deadline := func(id int) uint64 {
		d := uint64(id % 3)
		if flagged[id] {
			d |= 1 << 63
		}
		return d
	}
	period := 0
	freedIn := map[uint32]int{} // per free chunk, the period it was freed in
	fill := 4                   // of 10 operations, the pushes: waves come and go
	// push is Push, or TryPush and then Push if it refused, checking that
	// TryPush refuses exactly when the bucket's tail chunk is full or
	// missing, and then changes nothing, and that a new array is made only
	// when no chunk is free.
	push := func(step, b int, l *Link, d uint64, v int) {
		made, anyFree := len(s.chunks)-s.nblank, false
		for _, f := range s.free {
			anyFree = anyFree || f.n > 0
		}
		if r.IntN(2) == 0 {
			s.Push(b, l, d, v)
		} else {
			before, bk, n := *l, s.buckets[b], s.len
			if room := len(bk.live) < cap(bk.live); s.TryPush(b, l, d, v) != room {
				t.Fatalf("step %d: TryPush into bucket %d, %d of %d places used: %v", step, b, len(bk.live), cap(bk.live), !room)
			} else if !room {
				if *l != before || s.buckets[b].tail != bk.tail || len(s.buckets[b].live) != len(bk.live) || s.len != n {
					t.Fatalf("step %d: TryPush refused but changed the store or the link", step)
				}
				s.Push(b, l, d, v)
			}
		}
		if len(s.chunks)-s.nblank > made && anyFree {
			t.Fatalf("step %d: a new array made while a chunk was free", step)
		}
	}
	for step := range 200_000 {
		if step%5000 == 0 {
			fill = 1 + r.IntN(6)
		}
		id := r.IntN(len(links))
		l := &links[id]
		switch op := r.IntN(10); {
		case op == 0:
			s.Release()
			for c, p := range freedIn {
				if s.chunks[c-1].array() == nil {
					if p >= period {
						t.Fatalf("step %d: chunk %d, freed in this period, went back", step, c)
					}
					delete(freedIn, c)
				}
			}
			period++
		case op <= fill && in[id] == 0:
			b := pick()
			if r.IntN(4) == 0 {
				b = 0 // one crowded bucket
			}
			push(step, b, l, uint64(id%3), id)
			in[id] = b + 1
			count[b]++
			require.Equal(t, uint64(id%3), l.Deadline)
			if flagged[id] = r.IntN(8) == 0; flagged[id] {
				s.Find(l).Deadline |= 1 << 63
			}
		case op < 7 && in[id] != 0:
			e := s.Find(l)
			require.NotNil(t, e)
			b := s.BucketOf(l)
			require.Equal(t, in[id]-1, b)
			require.Equal(t, id, e.Value)
			require.Equal(t, deadline(id), e.Deadline)
			require.True(t, s.Remove(l, nil))
			require.Equal(t, Link{}, *l, "Remove unlinks")
			count[b]--
			require.Equal(t, count[b] == 0, s.Empty(b))
			in[id] = 0
		case op == 8 && step%2 == 0:
			// Move the last entries of a bucket's tail chunk to another
			// bucket, read in place, and cut them: a wheel's cascade.
			from, to := pick(), pick()
			if s.Empty(from) || from == to {
				continue
			}
			es, _ := s.Tail(from)
			n := 1 + r.IntN(len(es))
			for i := len(es) - 1; i >= len(es)-n; i-- {
				e := &es[i]
				require.Equal(t, deadline(e.Value), e.Deadline)
				push(step, to, e.Link, e.Link.Deadline, e.Value)
				if flagged[e.Value] {
					s.Find(e.Link).Deadline |= 1 << 63
				}
				in[e.Value] = to + 1
			}
			s.Cut(from, n)
			count[from] -= n
			count[to] += n
		case op == 8:
			// Exchange two entries of a bucket, in one chunk or two, as
			// a wheel brings the due ones to its end: each keeps its
			// value and flag and is found at the other's place.
			b := pick()
			if s.Empty(b) {
				continue
			}
			var all []*Entry[int]
			for es, prev := s.Tail(b); ; es, prev = s.Chunk(prev) {
				for i := range es {
					all = append(all, &es[i])
				}
				if prev == 0 {
					break
				}
			}
			x, y := all[r.IntN(len(all))], all[r.IntN(len(all))]
			vx, vy, lx, ly := x.Value, y.Value, *x.Link, *y.Link
			s.Exchange(x, y)
			if x.Value != vy || y.Value != vx || deadline(x.Value) != x.Deadline || deadline(y.Value) != y.Deadline {
				t.Fatalf("step %d: Exchange left values %d and %d, want %d and %d", step, x.Value, y.Value, vy, vx)
			}
			// Each Link names its entry's new place, and keeps its deadline.
			if want := (Link{Deadline: ly.Deadline, Chunk: lx.Chunk, Index: lx.Index}); *x.Link != want {
				t.Fatalf("step %d: Exchange left link %+v, want %+v", step, *x.Link, want)
			}
			if want := (Link{Deadline: lx.Deadline, Chunk: ly.Chunk, Index: ly.Index}); *y.Link != want {
				t.Fatalf("step %d: Exchange left link %+v, want %+v", step, *y.Link, want)
			}
		case step%4 == 0:
			// PopEach, as a wheel fires a bucket: from the last entry,
			// each unlinked before f sees it, while the last is due.
			// Deadlines are ids modulo 3, so that a bucket holds runs
			// of entries due together and entries that stop them.
			b := pick()
			es, _ := s.Tail(b)
			var last int
			due := uint64(r.IntN(3))
			if len(es) > 0 {
				last = es[len(es)-1].Value
				if r.IntN(4) != 0 {
					due = es[len(es)-1].Link.Deadline
				}
			}
			first, limit := true, 1+r.IntN(3)
			n := s.PopEach(b, limit, due, func(v int) {
				if first && v != last {
					t.Fatalf("step %d: PopEach took %d before the last entry, %d", step, v, last)
				}
				first = false
				if in[v] != b+1 || links[v] != (Link{}) || uint64(v%3) != due {
					t.Fatalf("step %d: PopEach gave %d, in bucket %d, link %+v, due %d", step, v, in[v]-1, links[v], due)
				}
				in[v] = 0
			})
			count[b] -= n
			if es, _ := s.Tail(b); n > limit || n < limit && len(es) != 0 && es[len(es)-1].Link.Deadline == due {
				t.Fatalf("step %d: PopEach took %d of at most %d and left a due entry last", step, n, limit)
			}
		default:
			b := pick()
			if s.Empty(b) {
				require.Zero(t, count[b])
				continue
			}
			e := s.Pop(b)
			require.Equal(t, b+1, in[e.Value])
			require.Equal(t, deadline(e.Value), e.Deadline)
			count[b]--
			require.Equal(t, count[b] == 0, s.Empty(b))
			*e.Link, in[e.Value] = Link{}, 0
		}
		if err := s.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for b := range count {
			if n := s.Len(b); n != count[b] || s.Empty(b) != (n == 0) {
				t.Fatalf("step %d: bucket %d holds %d entries, empty %v, want %d", step, b, n, s.Empty(b), count[b])
			}
		}
		free := map[uint32]bool{}
		for _, f := range s.free {
			for c := f.top; c != 0; c = s.prevs[c-1] {
				free[c] = true
				if _, ok := freedIn[c]; !ok {
					freedIn[c] = period
				}
			}
		}
		for c := range freedIn {
			if !free[c] && s.chunks[c-1].array() != nil {
				delete(freedIn, c) // taken again
			}
		}
		for id := range links {
			e := s.Find(&links[id])
			if (e != nil) != (in[id] != 0) || e != nil && (s.BucketOf(&links[id]) != in[id]-1 || e.Value != id) {
				t.Fatalf("step %d: link %d found %v, want bucket %d", step, id, e != nil, in[id]-1)
			}
		}
		// Remove refuses, changing nothing, what Find does not find: an
		// unlinked Link, and a copy of a linked one, which its entry does
		// not point back at; it reports the copy, and only the copy, to
		// foreign, with the copy as it was.
		id = r.IntN(len(links))
		copied := links[id]
		var reported []Link
		foreign := func(l Link) { reported = append(reported, l) }
		if s.Remove(&copied, foreign) || in[id] == 0 && s.Remove(&links[id], foreign) {
			t.Fatalf("step %d: Remove took a link that Find does not find", step)
		}
		if want := []Link{copied}; in[id] == 0 && len(reported) != 0 || in[id] != 0 && !slices.Equal(reported, want) {
			t.Fatalf("step %d: Remove reported %v as foreign; link %+v, linked %v", step, reported, copied, in[id] != 0)
		}
		if copied != links[id] {
			t.Fatalf("step %d: Remove changed a copy it refused", step)
		}
		// And a linked one corrupted: an Index past its chunk's array,
		// by one or by far, or a Chunk past the table, which Find and
		// Remove refuse before they read an entry (TestFindRefuses
		// names each such Link; a read far past the array faults).
		if in[id] != 0 {
			bad := links[id]
			switch r.IntN(3) {
			case 0:
				bad.Index = s.chunks[bad.Chunk-1].n + uint32(r.IntN(2))
			case 1:
				bad.Index = math.MaxUint32 - uint32(r.IntN(2))
			default:
				bad.Chunk = uint32(len(s.chunks)) + 1 + uint32(r.IntN(2))
			}
			was := bad
			reported = nil
			if s.Find(&bad) != nil || s.Remove(&bad, foreign) || !slices.Equal(reported, []Link{was}) || bad != was {
				t.Fatalf("step %d: a corrupted link %+v was not refused as foreign, unchanged", step, was)
			}
		}
	}
}

// TestChunkSizes checks that a bucket's chunks grow as the cube root of
// its entries, taking the sizes they ask for: at most 8·∛n for n entries
// and, with int values on a 64-bit platform, a ninth more as the allocator
// rounds them up to its size classes, with its header, so that it is few
// chunks, under 2·n^⅔ (n^⅔ but for the smaller free chunks it takes as it
// grows), and that only the tail has room, so that a bucket holds fewer
// spare places than its tail chunk, and not much more than twice its
// entries.
func TestChunkSizes(t *testing.T) {
	var s Store[int]
	s.Init(1, 0)
	links := make([]Link, 100_000)
	for n := range links {
		s.Push(0, &links[n], 0, n)
		spare, places := 0, 0
		tail, _ := s.Tail(0)
		chunks := chunksOf(&s, 0)
		for _, es := range chunks {
			spare += cap(es) - len(es)
			places += cap(es)
		}
		require.LessOrEqual(t, float64(len(chunks)), 2*math.Pow(float64(n+1), 2.0/3), "%d entries", n+1)
		require.Less(t, spare, cap(tail))
		require.LessOrEqual(t, float64(cap(tail)), 9*math.Cbrt(float64(n+1)), "%d entries", n+1)
		require.LessOrEqual(t, places, 2*(n+1)+2*MinChunk)
	}
	require.NoError(t, s.Check())
}

// TestReleaseAfterAPeriod checks what Release gives back: the chunks that
// stayed free through the whole period since the last Release, not those
// freed or taken during it, nor the headroom of those taken.
func TestReleaseAfterAPeriod(t *testing.T) {
	var s Store[int]
	s.Init(2, 0)
	links := make([]Link, 400)
	for i := range 200 {
		s.Push(0, &links[i], 0, i)
	}
	// A chunk of 8, six of 16 and three of 32 (rounded up by the
	// allocator). The second of each size came with its size's headroom,
	// 4: of 16, two taken by rule and two wanting 32, none of which was
	// free; of 32, one taken, so that three are left.
	chunks := len(chunksOf(&s, 0))
	require.Equal(t, 10, chunks)
	made, _ := s.Free()
	require.Equal(t, 3, made)
	for !s.Empty(0) { // a burst drains; the bucket keeps its first chunk
		s.Pop(0)
	}
	free, released := s.Free()
	require.Equal(t, made+chunks-1, free)
	require.Zero(t, released)

	s.Release() // freed during this period, or kept as headroom: kept
	free, released = s.Free()
	require.Equal(t, made+chunks-1, free)
	require.Zero(t, released)

	for i := range 20 { // a few come back, in two free chunks of 16
		s.Push(1, &links[i], 0, i) // (bucket 0 keeps the one chunk of 8)
	}
	// The six chunks of 32 stayed free through it, none needed: they go.
	// Of the six of 16 two were needed, and their headroom, 6, is more
	// than the four left: those stay.
	s.Release()
	free, released = s.Free()
	require.Equal(t, 6, released)
	require.Equal(t, 4, free)
	for _, es := range chunksOf(&s, 1) {
		require.Less(t, cap(es), 32, "the bucket took the sizes it needed")
	}
	require.NoError(t, s.Check())

	rows := len(s.chunks)
	for i := 20; i < len(links); i++ { // the wave returns, larger, in new arrays
		s.Push(1, &links[i], 0, i)
	}
	_, left := s.Free()
	require.Zero(t, left, "released chunks' rows are reused before new ones")
	require.Greater(t, len(s.chunks), rows, "the wave needed more than were released")
	require.NoError(t, s.Check())
}

// TestStoreZeroAllocs checks that pushing and removing in a warm store
// allocates nothing, at chunk boundaries too.
func TestStoreZeroAllocs(t *testing.T) {
	var s Store[int]
	s.Init(2, 0)
	links := make([]Link, 300)
	for i := range links {
		s.Push(i%2, &links[i], 0, i)
	}
	i := 0
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		l := &links[i%len(links)]
		i += 7
		b := s.BucketOf(l)
		s.Remove(l, nil)
		s.Push(1-b, l, 0, 0)
		e := s.Pop(b)
		if !s.TryPush(b, e.Link, 0, 0) {
			s.Push(b, e.Link, 0, 0)
		}
		s.Exchange(s.Find(&links[i%len(links)]), s.Find(&links[(i+3)%len(links)]))
	}))
	require.NoError(t, s.Check())
}

// TestNearestFreeSize checks that a bucket needing a chunk of a size none
// of whose chunks is free takes the nearest free one, larger first, before
// it allocates.
func TestNearestFreeSize(t *testing.T) {
	var s Store[int]
	s.Init(1, 0)
	// Free: three chunks of 8, one of 32 and one of 128.
	for _, size := range []int{0, 0, 0, 2, 4} {
		addFree(&s, size)
	}
	// The bucket needs 8: it is free. Then 16: none is, so the nearest
	// larger, 32; then 16 again, and the nearest larger is 128; then 32,
	// twice, and the nearest is smaller, 8; then 32, and none is left: a
	// new one.
	links := make([]Link, 300)
	for i := 0; len(chunksOf(&s, 0)) < 6; i++ {
		s.Push(0, &links[i], 0, i)
	}
	var got []int
	for _, es := range chunksOf(&s, 0) {
		got = append([]int{MinChunk << sizeOf(cap(es))}, got...) // rounded up by the allocator
	}
	require.Equal(t, []int{8, 32, 128, 8, 8, 32}, got)
	require.Equal(t, int32(2+headroom(1)), s.free[2].total, "the last, new, with its headroom")
	require.NoError(t, s.Check())
}

// leaveWays are the ways an entry leaves a bucket, each called until the
// bucket is empty: Pop and PopEach take its last entry, Remove its first
// (moving the last into the hole), Cut all of its tail chunk's.
var leaveWays = []struct {
	name string
	do   func(s *Store[int], bucket int)
}{
	{"Pop", func(s *Store[int], b int) { s.Pop(b) }},
	{"PopEach", func(s *Store[int], b int) { s.PopEach(b, 1, 0, nil) }},
	{"Remove", func(s *Store[int], b int) { es, _ := s.Tail(b); s.Remove(es[0].Link, nil) }},
	{"Cut", func(s *Store[int], b int) { es, _ := s.Tail(b); s.Cut(b, len(es)) }},
}

// TestFirstChunkSize checks that a store's buckets start with a chunk of
// MinChunk entries and keep it when they empty, however their entries
// leave, and that a bucket whose first chunk is larger, taken because none
// of that size was free, gives it back: emptied buckets keep at most
// MinChunk entries each.
func TestFirstChunkSize(t *testing.T) {
	for _, leave := range leaveWays {
		t.Run(leave.name, func(t *testing.T) {
			var s Store[int]
			s.Init(1, 0)
			// Capacities are rounded up to the allocator's size classes,
			// which differ between platforms: sizeOf names the size.
			size := func(es []Entry[int]) int { return MinChunk << sizeOf(cap(es)) }
			links := make([]Link, 4*MinChunk)
			s.Push(0, &links[0], 0, 0)
			es, _ := s.Tail(0)
			require.Equal(t, MinChunk, size(es), "the first chunk")
			for i := 1; len(chunksOf(&s, 0)) < 3; i++ { // chunks of 8, 16 and 16
				s.Push(0, &links[i], 0, i)
			}
			before, _ := s.Free()
			for !s.Empty(0) {
				leave.do(&s, 0)
			}
			es, prev := s.Tail(0)
			require.Equal(t, MinChunk, size(es), "the emptied bucket keeps its first chunk")
			require.Zero(t, prev)
			free, _ := s.Free()
			require.Equal(t, before+2, free, "its other two chunks are free")
			require.NoError(t, s.Check())

			// In a store whose only free chunk is of 16, a bucket that
			// needs 8 takes it, and gives it back when it empties.
			var other Store[int]
			other.Init(1, 0)
			addFree(&other, 1)
			other.Push(0, &links[0], 0, 0)
			es, _ = other.Tail(0)
			require.Equal(t, 2*MinChunk, size(es))
			leave.do(&other, 0)
			es, _ = other.Tail(0)
			require.Nil(t, es, "a first chunk of more than MinChunk entries goes back")
			free, _ = other.Free()
			require.Equal(t, 1, free)
			require.NoError(t, other.Check())
		})
	}
}

// TestWideBuckets checks that a wide bucket's first chunk holds as many
// entries as there are wide buckets, taken at that size even when only
// other sizes are free and made when none of it is, and that the bucket
// keeps it when it empties, however its entries leave, giving back the
// chunks after it; and that a bucket beyond the wide ones whose first
// chunk is of that size, taken for want of a smaller one, gives it back.
func TestWideBuckets(t *testing.T) {
	const wide = 8 * MinChunk
	for _, leave := range leaveWays {
		t.Run(leave.name, func(t *testing.T) {
			var s Store[int]
			s.Init(wide+1, wide)
			size := func(es []Entry[int]) int { return MinChunk << sizeOf(cap(es)) }
			addFree(&s, 0) // a chunk of MinChunk and one of 2·wide free,
			addFree(&s, sizeOf(2*wide))
			links := make([]Link, 4*wide)
			last := wide - 1 // the last wide bucket
			s.Push(last, &links[0], 0, 0)
			es, _ := s.Tail(last)
			require.Equal(t, wide, size(es), "a wide bucket's first chunk, made")
			free, _ := s.Free()
			require.Equal(t, 2, free, "the other sizes stay free")
			for i := 1; len(chunksOf(&s, last)) < 3; i++ {
				s.Push(last, &links[i], 0, i)
			}
			require.NoError(t, s.Check())
			before, _ := s.Free()
			for !s.Empty(last) {
				leave.do(&s, last)
			}
			es, prev := s.Tail(last)
			require.Equal(t, wide, size(es), "the emptied wide bucket keeps its first chunk")
			require.Zero(t, prev)
			free, _ = s.Free()
			require.Equal(t, before+2, free, "its other two chunks are free")
			require.NoError(t, s.Check())

			// In a store whose only free chunk has wide entries, bucket
			// wide, the first that is not wide, takes it as its first,
			// and gives it back when it empties.
			var other Store[int]
			other.Init(wide+1, wide)
			addFree(&other, sizeOf(wide))
			other.Push(wide, &links[0], 0, 0)
			es, _ = other.Tail(wide)
			require.Equal(t, wide, size(es))
			leave.do(&other, wide)
			es, _ = other.Tail(wide)
			require.Nil(t, es, "a bucket not wide gives back a first chunk of wide entries")
			free, _ = other.Free()
			require.Equal(t, 1, free)
			require.NoError(t, other.Check())
		})
	}
}

// TestCheckWideFirstChunk checks that Check reports a wide bucket whose
// first chunk is not of the wide size, whose units keeps would misread.
func TestCheckWideFirstChunk(t *testing.T) {
	var s Store[int]
	s.Init(64, 0)
	var l Link
	s.Push(0, &l, 0, 0)
	require.NoError(t, s.Check())
	s.wide, s.wideSize = 64, sizeOf(64) // bucket 0 wide, its chunk of 8
	require.ErrorContains(t, s.Check(), "packed: bucket 0, wide: its first chunk")
}

// TestBucketFull checks that a bucket whose count of places would
// overflow, one of 2^35 entries, refuses a new chunk with a message naming
// the package, before it changes anything. The count is set by hand: no
// test machine holds such a bucket.
func TestBucketFull(t *testing.T) {
	var s Store[int]
	s.Init(2, 0)
	links := make([]Link, MinChunk+1)
	for i := range MinChunk {
		s.Push(1, &links[i], 0, i)
	}
	s.buckets[1].units = math.MaxUint32 - 1
	want := fmt.Sprintf("packed: bucket 1 holds %d places; a bucket holds fewer than %d",
		uint64(math.MaxUint32-1)*MinChunk, uint64(math.MaxUint32)*MinChunk)
	require.PanicsWithValue(t, want, func() { s.Push(1, &links[MinChunk], 0, MinChunk) })
	require.Zero(t, links[MinChunk], "the link stays unlinked")
	require.Equal(t, MinChunk, s.Entries())
	s.buckets[1].units = 1
	require.NoError(t, s.Check())
}

// TestInitRefuses checks that Init refuses a number of buckets out of
// range with a message naming the package, and leaves the store as it was.
func TestInitRefuses(t *testing.T) {
	var s Store[int]
	s.Init(2, 0)
	var l Link
	s.Push(1, &l, 7, 7)
	wide := func(n, wide int) string {
		return fmt.Sprintf("packed: %d wide buckets of %d; want 0, or a power of two from 8 to 16384 and at most the buckets", wide, n)
	}
	for _, bad := range []struct {
		n, wide int
		msg     string
	}{
		{-1, 0, "packed: -1 buckets; want 0 to 2147483647"},
		{math.MinInt, 0, fmt.Sprintf("packed: %d buckets; want 0 to 2147483647", math.MinInt)},
		{64, 4, wide(64, 4)},                   // below MinChunk
		{64, 24, wide(64, 24)},                 // not a chunk's size
		{64, 128, wide(64, 128)},               // more than the buckets
		{64, -8, wide(64, -8)},                 // negative
		{1 << 20, 1 << 15, wide(1<<20, 1<<15)}, // beyond the largest chunk
	} {
		require.PanicsWithValue(t, bad.msg, func() { s.Init(bad.n, bad.wide) })
		require.Equal(t, 2, s.Buckets())
		require.Equal(t, 7, s.Find(&l).Value)
		require.NoError(t, s.Check())
	}
}

// TestFindRefuses checks that Find and Remove refuse every Link that names
// no entry of the store, reading nothing outside a chunk's array: a chunk
// number past the table, an index at or past the end of its chunk, a
// chunk whose array went back, and a place that holds no entry or
// another's. Under the race detector, whose pointer checks catch an
// address outside the array, it fails if Find's Index check is gone or
// admits the array's end.
func TestFindRefuses(t *testing.T) {
	var s Store[int]
	s.Init(2, 0)
	var live, gone Link
	s.Push(0, &live, 1, 1)
	s.Push(1, &gone, 1, 2)
	kept := gone.Chunk
	require.True(t, s.Remove(&gone, nil)) // its bucket keeps its chunk
	addFree(&s, 2)
	released := uint32(len(s.chunks))
	s.Release()
	s.Release() // no bucket took it for a period: its array goes back
	require.Nil(t, s.chunks[released-1].base)
	n := uint32(len(s.chunks[live.Chunk-1].array()))
	for _, bad := range []Link{
		{Chunk: uint32(len(s.chunks)) + 1},
		{Chunk: math.MaxUint32, Index: math.MaxUint32},
		{Chunk: live.Chunk, Index: n},
		{Chunk: live.Chunk, Index: n + 1},
		{Chunk: live.Chunk, Index: 1 << 20},
		{Chunk: live.Chunk, Index: math.MaxUint32},
		{Chunk: released, Index: 0},
		{Chunk: live.Chunk, Index: 1}, // an empty place
		{Chunk: kept, Index: 0},       // an empty chunk
		live,                          // a copy of a linked Link
	} {
		l := bad
		require.Nil(t, s.Find(&l), "%+v", bad)
		var reported []Link
		require.False(t, s.Remove(&l, func(l Link) { reported = append(reported, l) }), "%+v", bad)
		require.Equal(t, []Link{bad}, reported)
		require.Equal(t, bad, l, "left as it was")
	}
	require.Equal(t, 1, s.Find(&live).Value)
	require.NoError(t, s.Check())
}

// addFree makes a chunk of the given size number and puts it on its free
// list, counted as the store counts the chunks it makes: a free chunk that
// a test's buckets then find, as if an earlier wave had left it.
func addFree[V any](s *Store[V], size int) {
	s.putFree(size, s.newChunk(size))
	s.free[size].total++
}

// chunksOf returns the entries of bucket's chunks, its tail's first.
func chunksOf[V any](s *Store[V], bucket int) [][]Entry[V] {
	es, prev := s.Tail(bucket)
	chunks := [][]Entry[V]{es}
	for prev != 0 {
		es, prev = s.Chunk(prev)
		chunks = append(chunks, es)
	}
	return chunks
}

// TestLaterChunkOfFirstSize checks that a bucket whose second chunk, like
// its first, has MinChunk places (a free one taken for want of a free
// chunk of the 16 the rule asks for: nearestFree) gives that chunk
// back when it empties, however the entry leaves, and keeps only its
// first: the bucket's units, not a chunk's size, say which chunk it
// keeps (mutants of PopEach and dropTail that read only the size fail
// here, and in the wheels' randomized tests).
func TestLaterChunkOfFirstSize(t *testing.T) {
	for _, leave := range []struct {
		name string
		do   func(s *Store[int], links []Link)
	}{
		{"Pop", func(s *Store[int], _ []Link) { s.Pop(0) }},
		{"PopEach", func(s *Store[int], _ []Link) { s.PopEach(0, 1, 0, nil) }},
		{"Remove", func(s *Store[int], links []Link) { s.Remove(&links[MinChunk], nil) }},
	} {
		t.Run(leave.name, func(t *testing.T) {
			var s Store[int]
			s.Init(2, 0)
			links := make([]Link, MinChunk+2)
			for i := range MinChunk { // bucket 0's first chunk, full
				s.Push(0, &links[i], 0, i)
			}
			// Bucket 1's first chunk, made with the headroom of its
			// size: free chunks of MinChunk places.
			s.Push(1, &links[MinChunk+1], 0, 1)
			free := s.free[0].n
			require.NotZero(t, free, "spare chunks of MinChunk places")
			s.Push(0, &links[MinChunk], 0, MinChunk) // its second chunk: a free one of 8, none of 16 free
			es, prev := s.Tail(0)
			require.Equal(t, MinChunk, cap(es), "a spare is the second chunk")
			require.NotZero(t, prev)
			require.NoError(t, s.Check())

			leave.do(&s, links)
			require.NoError(t, s.Check())
			require.Equal(t, free, s.free[0].n, "the second chunk went back")
			es, prev = s.Tail(0)
			require.Equal(t, MinChunk, len(es), "the first chunk is the tail again")
			require.Zero(t, prev)
		})
	}
}

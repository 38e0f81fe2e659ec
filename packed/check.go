package packed

import "fmt"

// Check verifies the store's invariants (see Store) and returns the first
// violation, or nil: every chunk of every bucket, every free list and the
// blanks, every entry's Link, and the counts the store keeps. Its message
// starts "packed: ". O(chunks + entries); for tests.
func (s *Store[V]) Check() error {
	if err := s.check(); err != nil {
		return fmt.Errorf("packed: %w", err)
	}
	return nil
}

// check is Check without the package's name in front of its message.
func (s *Store[V]) check() error {
	if len(s.prevs) != len(s.chunks) {
		return fmt.Errorf("%d chunks, %d places in their lists", len(s.chunks), len(s.prevs))
	}
	owner := make([]int, len(s.chunks)) // per chunk: 1 + bucket, or -1 free, -2 blank
	var total [sizes]int32
	all := 0
	for b, bk := range s.buckets {
		t, entries, units := bk.tail, 0, uint32(0)
		first := 0 // the size number of the first chunk the bucket keeps
		if b < s.wide {
			first = s.wideSize
		}
		if t == 0 && bk.live != nil {
			return fmt.Errorf("bucket %d: no tail, but %d live entries of %d", b, len(bk.live), cap(bk.live))
		}
		for c := t; c != 0; {
			if c > uint32(len(s.chunks)) {
				return fmt.Errorf("bucket %d: chunk %d of %d", b, c, len(s.chunks))
			}
			ch := &s.chunks[c-1]
			if owner[c-1] != 0 {
				return fmt.Errorf("bucket %d: chunk %d also in %d", b, c, owner[c-1])
			}
			owner[c-1] = 1 + b
			es := ch.array()
			live, k := es, sizeOf(len(es))
			if c == t {
				live = bk.live
			}
			n := len(live)
			total[min(max(k, 0), sizes-1)]++
			switch {
			case int(ch.bucket) != b:
				return fmt.Errorf("bucket %d: chunk %d says bucket %d", b, c, ch.bucket)
			case len(es) < MinChunk<<k || k >= sizes:
				return fmt.Errorf("bucket %d: chunk %d has %d places", b, c, len(es))
			case cap(live) != len(es) || &live[:1][0] != &es[0]:
				return fmt.Errorf("bucket %d: its live entries are not its tail chunk %d's", b, c)
			case n == 0 && (c != t || s.prevs[c-1] != 0 || k != first):
				return fmt.Errorf("bucket %d: chunk %d is empty", b, c)
			case s.prevs[c-1] == 0 && b < s.wide && k != first:
				return fmt.Errorf("bucket %d, wide: its first chunk %d has %d places, not %d", b, c, len(es), s.wide)
			case c != t && n != len(es):
				return fmt.Errorf("bucket %d: chunk %d, not the tail, holds %d of %d", b, c, n, len(es))
			}
			for i := range live {
				e := &live[i]
				if e.Link == nil || e.Link.Chunk != c || e.Link.Index != uint32(i) {
					return fmt.Errorf("bucket %d chunk %d index %d: link %+v", b, c, i, e.Link)
				}
			}
			for _, e := range es[n:] {
				if e.Link != nil {
					return fmt.Errorf("bucket %d: chunk %d keeps an entry reachable past its last", b, c)
				}
			}
			entries += n
			units += 1 << min(max(k, 0), sizes-1)
			c = s.prevs[c-1]
		}
		if bk.units != units {
			return fmt.Errorf("bucket %d: says its chunks hold %d MinChunks; they hold %d", b, bk.units, units)
		}
		if bit := s.occupied[b>>6]>>(b&63)&1 != 0; bit != (entries > 0) {
			return fmt.Errorf("bucket %d: occupancy bit %v, %d entries", b, bit, entries)
		}
		all += entries
	}
	if all != s.len {
		return fmt.Errorf("%d entries, counted %d", all, s.len)
	}
	if n := len(s.buckets); n%64 != 0 && s.occupied[n/64]>>(n%64) != 0 {
		return fmt.Errorf("occupancy bits past the last bucket: %x", s.occupied[n/64])
	}
	for k := range s.free {
		f := &s.free[k]
		n := int32(0)
		for c := f.top; c != 0; c = s.prevs[c-1] {
			ch := &s.chunks[c-1]
			switch {
			case owner[c-1] != 0:
				return fmt.Errorf("free list %d: chunk %d also in %d", k, c, owner[c-1])
			case ch.bucket != -1 || sizeOf(int(ch.n)) != k:
				return fmt.Errorf("free list %d: chunk %d of bucket %d, %d places", k, c, ch.bucket, ch.n)
			}
			for _, e := range ch.array() {
				if e.Link != nil {
					return fmt.Errorf("free list %d: chunk %d keeps an entry reachable", k, c)
				}
			}
			owner[c-1] = -1
			n++
		}
		if n != f.n || f.low > f.n || f.low < 0 {
			return fmt.Errorf("free list %d: %d chunks, counted %d, low %d", k, n, f.n, f.low)
		}
		if total[k]+n != f.total {
			return fmt.Errorf("size %d: %d chunks in buckets and %d free, counted %d", k, total[k], n, f.total)
		}
	}
	n := 0
	for c := s.blanks; c != 0; c = s.prevs[c-1] {
		if owner[c-1] != 0 || s.chunks[c-1].base != nil || s.chunks[c-1].n != 0 {
			return fmt.Errorf("blank chunk %d: also in %d, or has an array", c, owner[c-1])
		}
		owner[c-1] = -2
		n++
	}
	if n != s.nblank {
		return fmt.Errorf("%d blank chunks, counted %d", n, s.nblank)
	}
	for c, o := range owner {
		if o == 0 {
			return fmt.Errorf("chunk %d is in no bucket, free list or blanks", c+1)
		}
	}
	return nil
}

package packwheel

import "math/bits"

// bitset holds one bit per bucket, 64 to a word: which buckets hold
// entries (store.occupied, which packed.Store keeps). Bucket b is bit b%64
// of word b/64, so that a hierarchical wheel's level l is word l.
type bitset []uint64

func (s bitset) has(b int) bool { return s[b>>6]>>(b&63)&1 != 0 }

// nextInRing returns how many bits after bit pos of word come before the
// first set bit, counting round the word from pos: 0 if bit pos is set, 64
// if none is. A hierarchical wheel's levels are rings of 64 slots.
func nextInRing(word uint64, pos int) int {
	return bits.TrailingZeros64(bits.RotateLeft64(word, -pos))
}

// nextCyclic returns how many bits after bit pos the first set bit is,
// counting round the first size bits (a power of two) and looking at span
// bits at most, and whether there is one: the distance to the next
// occupied bucket of a hashed wheel's ring. The bits after the first size
// must be clear. O(span/64).
func (s bitset) nextCyclic(pos, span, size int) (int, bool) {
	wordBits := min(size, 64)
	pos &= size - 1
	for d := 0; d < span; {
		if word := s[pos>>6] >> (pos & 63); word != 0 {
			d += bits.TrailingZeros64(word)
			return d, d < span
		}
		step := wordBits - pos&63
		d += step
		pos = (pos + step) & (size - 1)
	}
	return 0, false
}

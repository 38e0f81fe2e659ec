package workunit

// randMax is glibc's RAND_MAX.
const randMax = 1<<31 - 1

// glibcRand reproduces glibc's rand() after srand(1), the default seed, so
// that the workload creates the same pairs with the same request intervals
// as the C++ reference and the checksums can match.
//
// glibc's generator is an additive lagged Fibonacci generator:
// r[i] = r[i-31] + r[i-3] (mod 2^32), seeded by a Lehmer generator, with the
// first 344 values discarded and each output shifted right by one.
type glibcRand struct {
	ring [31]uint32 // the last 31 values of r; ring[pos] is r[i-31]
	pos  int
}

func newGlibcRand() *glibcRand {
	var r [344]uint32
	r[0] = 1
	for i := 1; i < 31; i++ {
		r[i] = uint32(16807 * uint64(r[i-1]) % randMax)
	}
	for i := 31; i < 34; i++ {
		r[i] = r[i-31]
	}
	for i := 34; i < len(r); i++ {
		r[i] = r[i-31] + r[i-3]
	}
	g := new(glibcRand)
	copy(g.ring[:], r[len(r)-31:])
	return g
}

// next returns the next output, in [0, randMax].
func (g *glibcRand) next() uint32 {
	v := g.ring[g.pos] + g.ring[(g.pos+28)%31] // r[i-31] + r[i-3]
	g.ring[g.pos] = v
	g.pos = (g.pos + 1) % 31
	return v >> 1
}

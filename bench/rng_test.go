package bench

import "math/bits"

// rng is a wyrand generator: a few cycles per number, so that choosing a
// random timer costs little next to the timer operation being measured.
// Every implementation starts from the same seed and so touches the same
// sequence of items.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// below returns a number in [0, n), by Lemire's multiply-shift rather than a
// division.
func (r *rng) below(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

package packwheel

import "math/bits"

// The hierarchical wheel's levels. Level L has 64 slots, each 64^L ticks
// wide, and is a ring of the 63 blocks of 64^L ticks after the block that
// holds Now (level 0: the 64 ticks from Now). A deadline goes to the lowest
// level whose ring reaches it (levelFor). Eleven levels cover every bit of
// a 64-bit tick, so no deadline is ever out of range or needs an overflow
// list, and every timer fires at its exact tick.
//
//	level  slot width   reaches up to   at 1 ms a tick
//	0      1 tick       64 ticks        64 ms, exact
//	1      2^6          2^12            4.1 s
//	2      2^12         2^18            4.4 min
//	3      2^18         2^24            4.7 h
//	4      2^24         2^30            12.4 days
//	5      2^30         2^36            2.2 years
//	6..10  2^36..2^60   2^42..2^64      beyond any deadline a uint64 tick holds
//
// Words: a level's slot is its index within the level, 0 to 63; a bucket
// is a wheel's flat number for a slot of a level, level<<levelBits | slot
// (bucketAt), the number store and packed.Link use.
const (
	levelBits  = 6
	levelSlots = 1 << levelBits
	levelCount = (64 + levelBits - 1) / levelBits
)

// levelShift returns log2 of the width of level l's slots, in ticks. The
// mask tells the compiler the shift is below 64, which spares every shift
// by it a test for a larger one.
func levelShift(l int) uint { return uint(l*levelBits) & 63 }

// blockOf returns the number of the level-l block, 64^l ticks wide, that
// holds tick t. Level l's ring is the 63 blocks after blockOf(Now, l).
func blockOf(t uint64, l int) uint64 { return t >> levelShift(l) }

// slotOf returns the slot of level l that tick t maps to: its l-th base-64
// digit.
func slotOf(t uint64, l int) int { return int(t >> levelShift(l) & (levelSlots - 1)) }

// bucketAt returns the bucket of slot slot of level l.
func bucketAt(l, slot int) int { return l<<levelBits | slot }

// levelOf returns the level of bucket b.
func levelOf(b int) int { return b >> levelBits }

// levelFor returns the level at which a deadline d >= now is placed when the
// wheel is at tick now: the lowest whose ring reaches it. The level is that
// of the highest bit of d-now, or the one above when d lies exactly 64
// blocks on: O(1).
//
// The textbook choice, the highest base-64 digit in which now and d differ,
// places by digits alone, so every timer whose short delay crosses a
// boundary of a coarse block is sent to the coarser level: ahead of each
// crossing of a 4096-tick boundary, a server re-arming 100-tick timeouts
// would pile all of them into one level-2 slot and then move them all down
// on a single tick, and one 64 ticks away would climb a level for half of
// them. By distance, a delay sets the level and a timer never climbs one
// for a boundary.
func levelFor(now, d uint64) int {
	diff := d - now
	if diff < levelSlots {
		return 0
	}
	l := (bits.Len64(diff) - 1) / levelBits
	if shift := levelShift(l); d>>shift-now>>shift >= levelSlots { // blockOf, for both
		l++
	}
	return l
}

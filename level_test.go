package packwheel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLevelFor pins levelFor at the boundaries of every level, as tokio's
// test_level_for pins its level_for: a level's ring is the 63 blocks after
// Now's, so a deadline goes up a level at 64^l ticks of distance, or at one
// tick less when Now is not at the start of its block and the deadline lies
// exactly 64 blocks on; and never up for crossing a block boundary.
func TestLevelFor(t *testing.T) {
	for _, c := range []struct {
		name   string
		now, d uint64
		level  int
	}{
		{"now itself", 0, 0, 0},
		{"the next tick", 0, 1, 0},
		{"the last tick of level 0", 0, 63, 0},
		{"the first beyond it", 0, 64, 1},
		{"level 0 is the 64 ticks from Now, wherever they fall", 100, 163, 0},
		{"64 ticks on from an unaligned Now", 100, 164, 1},
		{"a short delay across a 4096-tick boundary stays low", 4090, 4100, 0},
		{"the end of level 1's ring from an aligned Now", 0, 4095, 1},
		{"its first block beyond", 0, 4096, 2},
		{"63 blocks and 63 ticks on", 64, 64 + 4095, 1},
		{"exactly 64 level-1 blocks on", 65, 4096 + 64, 2},
		{"the end of level 5's ring", 0, 1<<36 - 1, 5},
		{"the first tick of level 6", 0, 1 << 36, 6},
		{"the farthest tick", 0, math.MaxUint64, 10},
		{"the farthest from the farthest Now", math.MaxUint64 - 1, math.MaxUint64, 0},
		{"MaxTick from 0", 0, MaxTick, 10},
	} {
		require.Equal(t, c.level, levelFor(c.now, c.d), "%s: levelFor(%d, %d)", c.name, c.now, c.d)
		require.Equal(t, c.level, ringLevel(c.now, c.d), "%s: the reference disagrees", c.name)
	}
	// Every level's first and last distance, from an aligned and an
	// unaligned Now. Level 0 counts ticks from Now, not blocks.
	require.Equal(t, 0, levelFor(1, 64), "63 ticks on")
	require.Equal(t, 1, levelFor(1, 65), "64 ticks on")
	for l := 1; l < levelCount; l++ {
		width := uint64(1) << levelShift(l)
		require.Equal(t, l-1, levelFor(0, width-1), "level %d, aligned, last tick below", l)
		require.Equal(t, l, levelFor(0, width), "level %d, aligned, first tick", l)
		if l > 1 {
			require.Equal(t, l, levelFor(1, width), "level %d, unaligned: 64 blocks on", l)
			require.Equal(t, l-1, levelFor(1, width-1), "level %d, unaligned: 63 blocks on", l)
		}
	}
}

// TestLevelForRandom checks levelFor against its definition, the lowest
// level whose ring reaches the deadline (ringLevel), at random distances of
// every size and at every level's boundaries.
func TestLevelForRandom(t *testing.T) {
	s := seed(t)
	r := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	for range 200_000 {
		now := r.Uint64() >> r.IntN(64)
		diff := r.Uint64() >> r.IntN(64)
		if r.IntN(4) == 0 { // near a power of 64
			diff = uint64(1)<<levelShift(1+r.IntN(levelCount-1)) + uint64(r.IntN(5)) - 2
		}
		d := now + min(diff, math.MaxUint64-now)
		require.Equal(t, ringLevel(now, d), levelFor(now, d), "levelFor(%d, %d)", now, d)
	}
}

// ringLevel is levelFor by its definition: level 0 holds the 64 ticks from
// now, level l > 0 the 63 blocks of 64^l ticks after now's.
func ringLevel(now, d uint64) int {
	if d-now < levelSlots {
		return 0
	}
	for l := 1; ; l++ {
		if blockOf(d, l)-blockOf(now, l) < levelSlots {
			return l
		}
	}
}

// TestSlotOf pins slotOf, a tick's base-64 digit for a level, and bucketAt
// and levelOf, which number a level's slots as buckets and back.
func TestSlotOf(t *testing.T) {
	for _, c := range []struct {
		t     uint64
		level int
		slot  int
	}{
		{0, 0, 0},
		{63, 0, 63},
		{64, 0, 0},
		{64, 1, 1},
		{4095, 1, 63},
		{4096, 1, 0},
		{4096, 2, 1},
		{1<<36 + 5<<30, 5, 5},
		{math.MaxUint64, 9, 63},
		{math.MaxUint64, 10, 15}, // the last level has 4 bits
	} {
		require.Equal(t, c.slot, slotOf(c.t, c.level), "slotOf(%d, %d)", c.t, c.level)
		b := bucketAt(c.level, c.slot)
		require.Equal(t, c.level, levelOf(b))
		require.Equal(t, c.level*levelSlots+c.slot, b)
	}
	require.Equal(t, levelCount*levelSlots-1, bucketAt(levelCount-1, levelSlots-1), "the last bucket")
}

package packwheel

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPickFewestMoves checks ScheduleRange's choice against every tick of
// the later half of random ranges: the fewest moves between levels, and
// among those the latest tick.
func TestPickFewestMoves(t *testing.T) {
	s := seed(t)
	r := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	cases := 400
	if testing.Short() || raceEnabled {
		cases = 40
	}
	for range cases {
		var w Wheel[int]
		w.s.now = r.Uint64N(1 << 40)
		if r.IntN(2) == 0 { // just before a boundary of some level
			w.s.now = uint64(1)<<(6*(1+r.IntN(6))) - 1 - r.Uint64N(60)
		}
		width := r.Uint64N(1 << (1 + r.IntN(18)))
		lo := w.s.now + 1 + r.Uint64N(1<<(1+r.IntN(22)))
		hi := lo + width
		got := w.pick(lo, hi)
		from := lo + (hi-lo)/2
		best, fewest := hi, moves(w.s.now, hi)
		for d := hi; d >= from; d-- {
			if m := moves(w.s.now, d); m < fewest {
				best, fewest = d, m
			}
		}
		require.Equal(t, best, got, "now %d range [%d, %d]: moves %d, want %d", w.s.now, lo, hi, moves(w.s.now, got), fewest)
	}
}

// TestMovesCounted checks moves against the moves down a timer makes.
func TestMovesCounted(t *testing.T) {
	s := seed(t)
	r := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	for range 2000 {
		var w Wheel[int]
		now := r.Uint64N(1 << 40)
		d := now + 1 + r.Uint64N(1<<(1+r.IntN(30)))
		w.Advance(now, nil)
		var h Holder
		w.Schedule(&h, d, 0)
		want := moves(now, d)
		count := 0
		for h.Active() {
			level := levelOf(w.bucketOf(&h))
			w.AdvanceLimit(d, 1, nil)
			if h.Active() && levelOf(w.bucketOf(&h)) != level {
				count++
			}
		}
		require.Equal(t, want, count, "now %d deadline %d", now, d)
	}
}

// TestPickHalf pins which ticks ScheduleRange considers: the later half of
// those from max(earliest, Now()+1) to latest, the last n/2+1 of n. Ticks
// up to Now()+63 are level 0's and never move; later ones move once.
func TestPickHalf(t *testing.T) {
	for _, c := range []struct {
		now, earliest, latest, want uint64
	}{
		{0, 60, 67, 63},   // 8 ticks: the last 5, 63 to 67, include level 0's last
		{0, 60, 70, 70},   // 11 ticks: the last 6, 65 to 70, all a level up
		{10, 0, 136, 73},  // halved from Now()+1 = 11: 73 to 136, and 73 is level 0's
		{10, 0, 137, 137}, // 74 to 137, none in level 0 (halved from 0, 73 would be in)
	} {
		var w Wheel[*conn]
		w.Advance(c.now, nil)
		var x conn
		w.ScheduleRange(&x.timer, c.earliest, c.latest, &x)
		require.Equal(t, c.want, x.timer.Deadline(), "now %d, range [%d, %d]", c.now, c.earliest, c.latest)
		mustCheck(t, &w)
	}
}

// TestEarlyFireAfterNextExpiryInCallback is issue 28's first bug: a
// NextExpiry from an expiry callback left a hint that outlived the
// Advance, and the next Advance set Now back to it and fired a later
// timer there.
func TestEarlyFireAfterNextExpiryInCallback(t *testing.T) {
	var w Wheel[int]
	var h Holder
	w.Schedule(&h, 10, 1)
	w.Advance(100, func(v int) {
		if v == 1 { // at tick 10: re-arm for tick 11, then ask for the next expiry
			w.Schedule(&h, 11, 2)
			w.NextExpiry(MaxTick)
		}
	})
	w.Schedule(&h, 139, 3) // level 0, slot 139%64 == 11
	fired := 0
	w.Advance(200, func(v int) {
		fired++
		require.Equal(t, uint64(139), w.Now(), "timer %d (deadline 139) fired early", v)
	})
	require.Equal(t, 1, fired)
	require.Equal(t, uint64(200), w.Now())
}

// TestStaleLevel0HeirPanics is issue 28's second bug: a level-0 slot's
// kept array, named as its level's heir, was replaced by a smaller one
// without the heir knowing, and the next slot to grow took it. Buckets of
// chunks have no heirs; the sequence stays as a test of crowds that fire,
// refill, empty by cancels and shrink in level 0.
func TestStaleLevel0HeirPanics(t *testing.T) {
	var w Wheel[int]
	hs := make([]Holder, 1022)
	for i := range hs { // level 1
		w.Schedule(&hs[i], 64, i)
	}
	w.Advance(127, nil) // they fire at 64
	for i := range 63 { // slot 1 (tick 129) grows to 63 entries
		w.Schedule(&hs[i], 129, i)
	}
	a, b := &hs[1000], &hs[1001]
	w.Schedule(a, 128, 0) // slot 0 refills...
	w.Cancel(a)           // ...and empties by a cancel
	w.Schedule(a, 128, 0)
	w.Schedule(b, 128, 0)
	w.Cancel(b)         // one entry left: slot 0 shrinks
	w.Advance(128, nil) // fires a
	w.Schedule(&hs[63], 129, 63)
	require.Equal(t, 64, w.Len())
	require.NoError(t, w.check())
}

// TestNextWorkAtBlockStart checks next's fast path (nextInBlock) at the
// edge of Now's level-1 block: a level-0 timer due at the next block's
// first tick shares it with the level-1 slot of that block, whose timers
// must move down and fire at that tick too, so the fast path must leave
// it to the walk of the levels. Both with NextExpiry's hint and without.
func TestNextWorkAtBlockStart(t *testing.T) {
	for _, ask := range []bool{false, true} {
		var w Wheel[int]
		var coarse, fine Holder
		w.Schedule(&coarse, 128, 1) // 128 ticks away: level 1, the block at 128
		w.Advance(100, nil)
		w.Schedule(&fine, 128, 2) // 28 ticks away: level 0, slot 0
		if ask {
			require.Equal(t, uint64(128), w.NextExpiry(MaxTick))
		}
		var fired []int
		w.Advance(128, func(v int) {
			require.Equal(t, uint64(128), w.Now())
			fired = append(fired, v)
		})
		require.ElementsMatch(t, []int{1, 2}, fired, "NextExpiry asked: %v", ask)
		require.NoError(t, w.check())
	}
}

// TestLevel0Wide checks that level 0's buckets are wide (Wheel.ready): a
// tick's 64 timers, scheduled there or moved down from level 1, fill one
// chunk, which the bucket keeps when they fire.
func TestLevel0Wide(t *testing.T) {
	var w Wheel[int]
	hs := make([]Holder, levelSlots)
	for _, d := range []uint64{5, 100} { // level 0, then level 1
		for i := range hs {
			w.Schedule(&hs[i], d, i)
		}
		w.Advance(d-1, nil)
		bucket := bucketAt(0, slotOf(d, 0))
		require.Equal(t, bucket, w.bucketOf(&hs[0]))
		es, prev := w.s.entries.Tail(bucket)
		require.Len(t, es, levelSlots, "deadline %d: a tick's timers in one chunk", d)
		require.Zero(t, prev, "deadline %d", d)
		w.Advance(d, nil)
		es, _ = w.s.entries.Tail(bucket)
		require.Empty(t, es)
		require.GreaterOrEqual(t, cap(es), levelSlots, "deadline %d: the bucket keeps its chunk", d)
		require.NoError(t, w.check())
	}
}

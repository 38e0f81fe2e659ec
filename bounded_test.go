package packwheel

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdvanceLimitBoundsCascades checks that moving a crowded coarse slot
// down a level is bounded like firing: no call does more than n timers of
// work, and every timer still fires at its tick.
func TestAdvanceLimitBoundsCascades(t *testing.T) {
	const timers, n = 10_000, 100
	var w Wheel[int]
	holders := make([]Holder, timers)
	start := uint64(1 << 18) // a level-3 boundary: one slot holds them all
	w.Advance(start-30_000, nil)
	for i := range holders {
		w.Schedule(&holders[i], start+uint64(i%4000), i)
	}
	w.Advance(start-1, nil)
	require.Equal(t, timers, w.Len(), "fired before their time")

	calls := 0
	fired := 0
	expire := func(i int) {
		fired++
		require.Equal(t, start+uint64(i%4000), w.Now(), "timer %d", i)
	}
	for !w.AdvanceLimit(start+4000, n, expire) {
		calls++
		require.NoError(t, w.check())
	}
	require.Equal(t, timers, fired)
	// Each timer moves down at most twice and fires once.
	require.GreaterOrEqual(t, calls, timers/n)
	require.Zero(t, w.Len())
}

// TestRescheduleToNowWhilePending reschedules, to Now, a timer of tick Now
// that a bounded advance left unfired: it must fire at the next tick, not
// be left at Now. Its entry is due at Now, the one case in which a deadline
// no later than the entry's is also no later than Now, so the fast path
// that pushes timers back must not take it. At a level boundary, so that in
// the hierarchical wheel the timers wait in a coarse slot that the bounded
// advance leaves half moved down.
func TestRescheduleToNowWhilePending(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		const at = 1 << 12
		conns := make([]conn, 3)
		for i := range conns {
			w.Schedule(&conns[i].timer, at, &conns[i])
		}
		var fired []uint64
		expire := func(*conn) { fired = append(fired, w.Now()) }
		require.False(t, w.AdvanceLimit(at, 1, expire), "stops within tick %d", at)
		require.Equal(t, uint64(at), w.Now())
		mustCheck(t, w)
		var left *conn // the first scheduled, the last a bucket gets to
		for i := len(conns) - 1; i >= 0; i-- {
			if conns[i].timer.Active() {
				left = &conns[i]
			}
		}
		require.NotNil(t, left, "a timer of tick %d left unfired", at)
		require.Equal(t, uint64(at), left.timer.Deadline())

		w.Schedule(&left.timer, at, left)
		require.Equal(t, uint64(at+1), left.timer.Deadline(), "a deadline of Now means the next tick")
		mustCheck(t, w)
		w.Advance(at+1, expire)
		require.False(t, left.timer.Active())
		require.Equal(t, uint64(at+1), fired[len(fired)-1], "the rescheduled timer fired last, at the next tick")
		require.Zero(t, w.Len())
	})
}

// TestQuietAdvanceFinishesMove checks that the quiet path of Advance, which
// only moves Now when the wheel's hint says nothing is due, is not taken
// while a bounded advance's move down is unfinished: NextExpiry answers Now
// while the half-moved slot holds a timer, whose hint the next Advance
// follows to finish the move; once every timer left there is cancelled it
// looks past the empty slot to the far timer's, and the Advance after that
// moves Now on with nothing left behind.
func TestQuietAdvanceFinishesMove(t *testing.T) {
	var w Wheel[int]
	holders := make([]Holder, 10)
	start := uint64(1 << 18) // a level-3 boundary: one slot holds them all
	for i := range holders {
		w.Schedule(&holders[i], start+uint64(i), i)
	}
	var far Holder
	w.Schedule(&far, start<<4, -1)
	w.Advance(start-1, nil)
	require.False(t, w.AdvanceLimit(start+100, 1, nil))
	require.Equal(t, start, w.Now(), "the bounded advance stops within the move")
	require.Equal(t, start, w.NextExpiry(MaxTick), "the move down is due at Now")
	require.False(t, w.AdvanceLimit(start+100, 1, nil), "the hint of Now is followed")
	require.NoError(t, w.check())
	for i := range holders {
		w.Cancel(&holders[i])
	}
	require.Equal(t, start<<4&^(1<<18-1), w.NextExpiry(MaxTick), "the next work is the far timer's slot")
	w.Advance(start+100, nil)
	require.NoError(t, w.check())
	require.Equal(t, start+100, w.Now())
	require.True(t, far.Active())
	require.Equal(t, 1, w.Len())
}

// TestAdvanceLimitExact checks that a bounded advance which fires exactly
// its limit, the last of them the last timer due, reports that it caught
// up, and one with a timer left over does not.
func TestAdvanceLimitExact(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		conns := make([]conn, 4)
		for i := range conns {
			w.Schedule(&conns[i].timer, 5+uint64(i/3), &conns[i]) // 3 at tick 5, 1 at 6
		}
		require.True(t, w.AdvanceLimit(5, 3, nil), "3 due, 3 allowed")
		require.Equal(t, 1, w.Len())
		w.Schedule(&conns[0].timer, 6, &conns[0])
		require.False(t, w.AdvanceLimit(6, 1, nil), "2 due, 1 allowed")
		require.True(t, w.AdvanceLimit(6, 1, nil), "1 due, 1 allowed")
		require.Zero(t, w.Len())
	})
}

// TestAdvanceLimitCancelledRest checks that a bounded advance whose
// callback cancels the rest of the tick it stopped in reports that it
// caught up: nothing is left, though it stopped at its limit. The hashed
// wheel reported false there until its walk learnt to go on
// (Hashed.finished).
func TestAdvanceLimitCancelledRest(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		var a, b, later conn
		w.Schedule(&a.timer, 5, &a)
		w.Schedule(&b.timer, 5, &b)
		w.Schedule(&later.timer, 9, &later)
		fired := 0
		cancelOther := func(c *conn) {
			fired++
			if c == &a {
				w.Cancel(&b.timer)
			} else {
				w.Cancel(&a.timer)
			}
		}
		require.True(t, w.AdvanceLimit(8, 1, cancelOther), "one fired, its bucket-mate cancelled")
		require.Equal(t, 1, fired)
		require.Equal(t, uint64(8), w.Now())
		require.True(t, later.timer.Active())
		require.Equal(t, uint64(9), w.NextExpiry(100))
	})
}

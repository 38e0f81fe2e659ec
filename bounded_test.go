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
		if w.cascading != 0 {
			require.Equal(t, start&^(1<<12-1), w.Now()&^(1<<12-1), "a half-moved slot outside its time")
		}
	}
	require.Equal(t, timers, fired)
	// Each timer moves down at most twice and fires once.
	require.GreaterOrEqual(t, calls, timers/n)
	require.Zero(t, w.Len())
}

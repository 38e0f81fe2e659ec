package packwheel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClock(t *testing.T) {
	origin := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	c := NewClock(origin, 10*time.Millisecond)
	at := func(d time.Duration) time.Time { return origin.Add(d) }

	require.Equal(t, 10*time.Millisecond, c.Resolution())
	require.Equal(t, uint64(0), c.Tick(at(-time.Hour)))
	require.Equal(t, uint64(0), c.Tick(at(9*time.Millisecond)))
	require.Equal(t, uint64(1), c.Tick(at(10*time.Millisecond)))
	require.Equal(t, uint64(360_000), c.Tick(at(time.Hour)))
	require.Equal(t, MaxTick, NewClock(origin, time.Nanosecond).Tick(origin.Add(1<<62).Add(1<<62).Add(1<<62)))

	// A deadline is the first tick starting at or after now+after.
	require.Equal(t, uint64(3), c.Deadline(at(5*time.Millisecond), 25*time.Millisecond))
	require.Equal(t, uint64(4), c.Deadline(at(5*time.Millisecond), 26*time.Millisecond))
	require.Equal(t, uint64(1), c.Deadline(at(5*time.Millisecond), -time.Second), "a negative delay means now")
	require.Equal(t, uint64(0), c.Deadline(at(-time.Second), 0))

	require.Equal(t, 15*time.Millisecond, c.Until(2, at(5*time.Millisecond)))
	require.Equal(t, time.Duration(0), c.Until(2, at(25*time.Millisecond)))
	require.Equal(t, time.Duration(1<<63-1), c.Until(MaxTick, origin))

	// Far timeouts saturate instead of wrapping around to "now".
	require.Equal(t, MaxTick, c.Deadline(at(time.Second), time.Duration(1<<63-1)))
	require.Equal(t, time.Duration(1<<63-1), NewClock(origin, time.Nanosecond).Until(MaxTick-10, at(-time.Hour)))
	require.Equal(t, 2*time.Hour, c.Until(360_000, at(-time.Hour)))

	require.PanicsWithValue(t, "packwheel: NewClock: resolution 0s must be positive",
		func() { NewClock(origin, 0) })
}

// TestClockAllocs holds Clock to its documented promise that its methods
// allocate nothing: an event loop calls them on every iteration.
func TestClockAllocs(t *testing.T) {
	origin := time.Now()
	c := NewClock(origin, time.Millisecond)
	now := origin.Add(time.Hour)
	var ticks uint64
	var wait time.Duration
	allocs := testing.AllocsPerRun(1000, func() {
		tick := c.Tick(now)
		ticks += tick + c.Deadline(now, 30*time.Second)
		wait += c.Until(tick+100, now) + c.Resolution()
	})
	require.Zero(t, allocs, "Clock methods allocate")
	require.NotZero(t, ticks)
	require.NotZero(t, wait)
}

// TestClockDrivesWheel runs a wheel from a fake clock and checks that no
// timer fires before its delay has passed, nor later than one resolution
// after the advance that follows it.
func TestClockDrivesWheel(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		origin := time.Unix(1_700_000_000, 0)
		c := NewClock(origin, 4*time.Millisecond)
		now := origin
		conns := make([]conn, 200)
		due := make([]time.Time, len(conns))
		for i := range conns {
			delay := time.Duration(i*7919%5000) * time.Microsecond * 97
			due[i] = now.Add(delay)
			w.Schedule(&conns[i].timer, c.Deadline(now, delay), &conns[i])
			conns[i].id = i
		}
		fired := 0
		for w.Len() > 0 {
			// Sleep as the wheel says, but never more than 50 ms.
			wait := min(c.Until(w.NextExpiry(c.Tick(now.Add(50*time.Millisecond))), now), 50*time.Millisecond)
			now = now.Add(max(wait, time.Millisecond))
			w.Advance(c.Tick(now), func(cn *conn) {
				fired++
				require.False(t, now.Before(due[cn.id]), "timer %d fired early", cn.id)
				require.Less(t, now.Sub(due[cn.id]), c.Resolution()+time.Millisecond, "timer %d fired late", cn.id)
			})
		}
		require.Equal(t, len(conns), fired)
	})
}

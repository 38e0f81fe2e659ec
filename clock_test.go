package packwheel

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/monoskew"
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

	require.Equal(t, 15*time.Millisecond, c.Until(at(5*time.Millisecond), 2))
	require.Equal(t, time.Duration(0), c.Until(at(25*time.Millisecond), 2))
	require.Equal(t, time.Duration(1<<63-1), c.Until(origin, MaxTick))

	// Far timeouts saturate instead of wrapping around to "now".
	require.Equal(t, MaxTick, c.Deadline(at(time.Second), time.Duration(1<<63-1)))
	require.Equal(t, time.Duration(1<<63-1), NewClock(origin, time.Nanosecond).Until(at(-time.Hour), MaxTick-10))
	require.Equal(t, 2*time.Hour, c.Until(at(-time.Hour), 360_000))

	requireMisuse(t, "packwheel: NewClock: resolution 0s must be positive",
		func() { NewClock(origin, 0) })
}

// TestClockArgumentOrder pins one argument order for the package: every
// Clock method that takes the current time takes it first, whatever else it
// takes (a delay, a tick). Until once took the tick first while Deadline and
// Range took now first.
func TestClockArgumentOrder(t *testing.T) {
	timeType := reflect.TypeFor[time.Time]()
	clock := reflect.TypeFor[Clock]()
	checked := 0
	for i := range clock.NumMethod() {
		m := clock.Method(i)
		// In a method's type from reflect.Type, In(0) is the receiver.
		for arg := 2; arg < m.Type.NumIn(); arg++ {
			if m.Type.In(arg) == timeType {
				t.Errorf("Clock.%s takes a time.Time as argument %d; now goes first", m.Name, arg)
			}
		}
		if m.Type.NumIn() > 2 && m.Type.In(1) == timeType {
			checked++
		}
	}
	require.Equal(t, 3, checked, "Deadline, Range and Until take now and something else")

	c := NewClock(time.Unix(0, 0), time.Millisecond)
	now := time.Unix(0, 0).Add(5 * time.Millisecond)
	require.Equal(t, 5*time.Millisecond, c.Until(now, c.Deadline(now, 5*time.Millisecond)))
}

// TestClockRange checks Range against Deadline and the tick boundaries:
// latest is the last tick that begins within one resolution after the
// timeout, earliest the first at or after it.
func TestClockRange(t *testing.T) {
	origin := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	c := NewClock(origin, 10*time.Millisecond)
	at := func(d time.Duration) time.Time { return origin.Add(d) }
	for _, tc := range []struct {
		now, after       time.Duration
		earliest, latest uint64
	}{
		{5 * time.Millisecond, 25 * time.Millisecond, 3, 4}, // due at 30 ms, where tick 3 begins
		{5 * time.Millisecond, 26 * time.Millisecond, 4, 4}, // due at 31 ms
		{0, 0, 0, 1}, // due at the origin
		{5 * time.Millisecond, -time.Second, 1, 1},                  // a negative delay means now
		{-time.Hour, time.Second, 0, 0},                             // due before the origin
		{-time.Hour, time.Hour, 0, 1},                               // due at the origin
		{time.Second, 1<<63 - 1, MaxTick, MaxTick},                  // saturates
		{-time.Second, 1<<63 - 1, 922_337_203_586, 922_337_203_586}, // just fits
	} {
		earliest, latest := c.Range(at(tc.now), tc.after)
		require.Equal(t, tc.earliest, earliest, "now %v after %v", tc.now, tc.after)
		require.Equal(t, tc.latest, latest, "now %v after %v", tc.now, tc.after)
		require.Equal(t, c.Deadline(at(tc.now), tc.after), earliest)
	}
}

// TestClockFarFuture is the case of udpsessions -timeout 1200000h
// -resolution 1ns: now+timeout lies past the year 2157, where time.Add
// drops the monotonic reading, so Tick(now.Add(d)) measures on the wall
// clock what Deadline(now, d) measures on the monotonic one. Range reads
// now once and stays ordered.
func TestClockFarFuture(t *testing.T) {
	origin, now := monoskew.Pair(t, 2*time.Nanosecond)
	c := NewClock(origin, time.Nanosecond)
	const timeout = 1_200_000 * time.Hour
	far := now.Add(timeout)
	require.Equal(t, far, far.Round(0), "Add kept the monotonic reading: the case is not exercised")
	require.Greater(t, c.Deadline(now, timeout), c.Tick(now.Add(timeout+c.Resolution())),
		"the pair of calls README.md used to show is ordered: the case is not exercised")

	earliest, latest := c.Range(now, timeout)
	require.Equal(t, c.Deadline(now, timeout), earliest)
	require.Equal(t, earliest+1, latest, "at 1 ns every tick boundary is a due time")
	require.Equal(t, timeout, c.Until(now, earliest))
}

// TestClockExtremes checks, for the first and last representable times as
// origins and instants, delays from the shortest Duration to the longest
// and resolutions from 1 ns to the longest, that Clock's answers agree
// with each other and stay in range (see checkClock).
func TestClockExtremes(t *testing.T) {
	first := time.Unix(-1<<63, 0)
	last := time.Unix(1<<63-1-62_135_596_800, 999_999_999) // seconds from year 1 to 1970
	require.Equal(t, maxDuration, last.Sub(first))
	wall := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	mono := time.Now()
	instants := []time.Time{first, first.Add(1), time.Time{}, wall, wall.Add(-1), wall.Add(1),
		mono, mono.Add(1), mono.Add(-1 << 62), mono.Add(1 << 62).Add(1 << 62), last.Add(-1), last}
	durations := []time.Duration{-1 << 63, -1, 0, 1, 7, time.Millisecond, time.Hour,
		1<<62 - 1, 1 << 62, maxDuration - 1, maxDuration}
	for _, origin := range instants {
		for _, res := range []time.Duration{1, 7, 10 * time.Millisecond, 1 << 62, maxDuration} {
			c := NewClock(origin, res)
			for _, now := range instants {
				for _, after := range durations {
					checkClock(t, c, now, after)
				}
			}
		}
	}

	rng := rand.New(rand.NewPCG(15, 1))
	for range 100_000 {
		origin := time.Unix(rng.Int64(), rng.Int64N(1e9))
		c := NewClock(origin, time.Duration(1+rng.Int64N(1<<rng.IntN(63))))
		now := origin.Add(time.Duration(rng.Int64()))
		checkClock(t, c, now, time.Duration(rng.Int64()>>rng.IntN(64)))
	}
}

// checkClock checks Clock's answers for one instant and delay against each
// other: never early, at most a resolution late unless the due time is
// before the origin (no earlier tick exists) or saturates, ranges ordered,
// sleeps never negative.
func checkClock(t *testing.T, c Clock, now time.Time, after time.Duration) {
	t.Helper()
	elapsed := now.Sub(c.origin)
	tick := c.Tick(now)
	earliest, latest := c.Range(now, after)
	where := func() string {
		return "origin " + c.origin.String() + " resolution " + c.resolution.String() +
			" now " + now.String() + " after " + after.String()
	}
	if tick > MaxTick || latest > MaxTick || earliest > latest || latest > earliest+1 {
		t.Fatalf("%s: tick %d, range %d..%d", where(), tick, earliest, latest)
	}
	if d := c.Deadline(now, after); d != earliest || d < tick {
		t.Fatalf("%s: deadline %d, tick %d, earliest %d", where(), d, tick, earliest)
	}
	if elapsed >= 0 && c.Until(now, tick) != 0 {
		t.Fatalf("%s: tick %d begins in %v", where(), tick, c.Until(now, tick))
	}
	after = max(after, 0)
	if elapsed > maxDuration-after-1 {
		// Due at or past the longest Duration after the origin.
		if earliest != MaxTick || latest != MaxTick {
			t.Fatalf("%s: range %d..%d does not saturate", where(), earliest, latest)
		}
		return
	}
	toEarliest, toLatest := c.Until(now, earliest), c.Until(now, latest)
	// Until saturates too: a tick that begins too late for a Duration
	// reads as the longest one, which may equal after.
	if toEarliest < after || toLatest < after || latest > 0 && toLatest == after && after != maxDuration {
		t.Fatalf("%s: early: earliest in %v, latest in %v", where(), toEarliest, toLatest)
	}
	if elapsed+after < 0 || toLatest == maxDuration {
		return // due before tick 0, or the tick begins too late for a Duration
	}
	if toEarliest-after >= c.resolution || toLatest-after > c.resolution {
		t.Fatalf("%s: late: earliest in %v, latest in %v", where(), toEarliest, toLatest)
	}
}

// TestZeroClock checks that a Clock not made by NewClock says so rather
// than dividing by zero.
func TestZeroClock(t *testing.T) {
	var c Clock
	now := time.Now()
	require.Zero(t, c.Resolution())
	requireMisuse(t, "packwheel: Clock.Tick: zero Clock; make one with NewClock",
		func() { c.Tick(now) })
	requireMisuse(t, "packwheel: Clock.Deadline: zero Clock; make one with NewClock",
		func() { c.Deadline(now, time.Second) })
	requireMisuse(t, "packwheel: Clock.Range: zero Clock; make one with NewClock",
		func() { c.Range(now, time.Second) })
	requireMisuse(t, "packwheel: Clock.Until: zero Clock; make one with NewClock",
		func() { c.Until(now, 1) })
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
		wait += c.Until(now, tick+100) + c.Resolution()
		earliest, latest := c.Range(now, 30*time.Second)
		ticks += earliest + latest
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
			wait := min(c.Until(now, w.NextExpiry(c.Tick(now.Add(50*time.Millisecond)))), 50*time.Millisecond)
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

// BenchmarkClock measures each Clock method, as an event loop calls them
// once per iteration and idleconn calls Tick per tick and per connection
// opened.
func BenchmarkClock(b *testing.B) {
	origin := time.Now()
	c := NewClock(origin, time.Millisecond)
	now := origin.Add(time.Hour)
	var sink uint64
	b.Run("method=Tick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink += c.Tick(now)
		}
	})
	b.Run("method=Deadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink += c.Deadline(now, 30*time.Second)
		}
	})
	b.Run("method=Range", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			earliest, latest := c.Range(now, 30*time.Second)
			sink += earliest + latest
		}
	})
	b.Run("method=Until", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink += uint64(c.Until(now, 3_600_100))
		}
	})
	if sink == 0 {
		b.Fatal("no work")
	}
}

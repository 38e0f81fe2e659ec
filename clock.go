package packwheel

import (
	"fmt"
	"time"
)

// Clock maps wall-clock time to wheel ticks of a fixed resolution, counted
// from an origin, for callers who drive a wheel from time.Now. Tick k is the
// interval [origin + k*resolution, origin + (k+1)*resolution).
//
// Every answer is computed from now.Sub(origin) and a duration, with
// saturating arithmetic: ticks stay within 0..MaxTick and durations within
// 0..the longest time.Duration for every representable time and delay. For
// "now plus a delay" pass the delay (Deadline, Range) rather than
// now.Add(delay) to Tick: Add drops the monotonic reading of a time past
// about the year 2157, and Tick would then measure it on the wall clock
// while Deadline measures now on the monotonic one; the two can differ by
// nanoseconds, enough to reverse a range (TestClockFarFuture).
//
// A Clock is a small value, safe to copy and to use from any goroutine; its
// methods allocate nothing. They take the current time as an argument, so
// tests can drive them with a fake clock. The zero value is not usable: make
// one with NewClock. Its Resolution is 0 and its other methods panic with a
// message starting "packwheel: ".
type Clock struct {
	origin     time.Time
	resolution time.Duration
}

// NewClock returns a Clock whose tick 0 begins at origin. Pass a time from
// time.Now so that durations use the monotonic clock. It panics if
// resolution is not positive. O(1), no allocation; a Clock is a value,
// safe to copy and to use from any goroutine.
func NewClock(origin time.Time, resolution time.Duration) Clock {
	if resolution <= 0 {
		panic(misuse(fmt.Sprintf("packwheel: NewClock: resolution %v must be positive", resolution)))
	}
	return Clock{origin: origin, resolution: resolution}
}

// Resolution returns the length of one tick, 0 for the zero Clock.
// O(1), no allocation.
func (c Clock) Resolution() time.Duration { return c.resolution }

// Tick returns the tick that t falls in: the one to Advance to at time t.
// Times before the origin map to 0, times past MaxTick to MaxTick.
// It panics on the zero Clock. O(1), no allocation.
func (c Clock) Tick(t time.Time) uint64 {
	if c.resolution <= 0 {
		panic(misuse(zeroClock + "Tick" + zeroClockHint))
	}
	d := t.Sub(c.origin)
	if d <= 0 {
		return 0
	}
	// At most MaxTick: d is a Duration and resolution at least 1 ns.
	return uint64(d / c.resolution)
}

// Deadline returns the first tick that begins at or after now+after: a
// timer scheduled for it never fires before after has passed, and at most
// one resolution plus the caller's advance interval later. A negative
// after means now. It panics on the zero Clock. O(1), no allocation.
func (c Clock) Deadline(now time.Time, after time.Duration) uint64 {
	if c.resolution <= 0 {
		panic(misuse(zeroClock + "Deadline" + zeroClockHint))
	}
	return c.ceil(c.since(now, after))
}

// Range returns the ticks to pass to ScheduleRange for a timer that must
// fire once after has passed since now, and at most one resolution later
// plus the caller's advance interval: earliest is Deadline(now, after), and
// latest the last tick that begins within one resolution after now+after.
// Both come from one reading of now, so earliest <= latest <= earliest+1
// for every now and after, and a timeout too long for a time.Duration
// saturates both at MaxTick instead of wrapping around to now. A negative
// after means now. It panics on the zero Clock. O(1), no allocation.
func (c Clock) Range(now time.Time, after time.Duration) (earliest, latest uint64) {
	if c.resolution <= 0 {
		panic(misuse(zeroClock + "Range" + zeroClockHint))
	}
	due := c.since(now, after)
	switch {
	case due < 0:
		return 0, 0 // no tick begins before the origin
	case due == maxDuration:
		return MaxTick, MaxTick
	}
	// The tick that due+resolution falls in, without computing a sum that
	// could overflow; at most MaxTick, as due is below the longest Duration.
	return c.ceil(due), uint64(due/c.resolution) + 1
}

// Until returns how long after now the tick begins: how long an event loop
// may sleep before advancing to it. It is zero if the tick has begun, and
// saturates rather than overflowing for ticks centuries away. Like every
// Clock method that reads the time, it takes now first
// (TestClockArgumentOrder). It panics on the zero Clock. O(1), no
// allocation.
func (c Clock) Until(now time.Time, tick uint64) time.Duration {
	if c.resolution <= 0 {
		panic(misuse(zeroClock + "Until" + zeroClockHint))
	}
	if tick > uint64(maxDuration/c.resolution) {
		return maxDuration
	}
	start := time.Duration(tick) * c.resolution
	elapsed := now.Sub(c.origin)
	switch {
	case start <= elapsed:
		return 0
	case elapsed < 0 && start > maxDuration+elapsed:
		return maxDuration
	}
	return start - elapsed
}

// since returns how long after the origin now+after is, saturating at the
// longest Duration; a negative after counts as zero.
func (c Clock) since(now time.Time, after time.Duration) time.Duration {
	return addSaturating(now.Sub(c.origin), max(after, 0))
}

// ceil returns the first tick that begins at or after d after the origin.
// A d of the longest Duration stands for any later time too (see since):
// its tick is MaxTick, so that a deadline too far to compute never fires.
func (c Clock) ceil(d time.Duration) uint64 {
	switch {
	case d <= 0:
		return 0
	case d == maxDuration:
		return MaxTick
	}
	// At most MaxTick, as d is below the longest Duration.
	ticks := uint64(d / c.resolution)
	if d%c.resolution != 0 {
		ticks++
	}
	return ticks
}

// A zero Clock's methods panic with zeroClock + method + zeroClockHint:
// constants, so that the check adds no call to the methods (the panic is
// checked by TestZeroClock, the cost by BenchmarkClock).
const (
	zeroClock     = "packwheel: Clock."
	zeroClockHint = ": zero Clock; make one with NewClock"
)

// addSaturating returns d+e for e >= 0, or the longest Duration if the sum
// would overflow.
func addSaturating(d, e time.Duration) time.Duration {
	if d > maxDuration-e {
		return maxDuration
	}
	return d + e
}

// maxDuration is the longest time.Duration, where Clock saturates.
const maxDuration = time.Duration(1<<63 - 1)

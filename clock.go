package packwheel

import (
	"fmt"
	"time"
)

// Clock maps wall-clock time to wheel ticks of a fixed resolution, counted
// from an origin, for callers who drive a wheel from time.Now. Tick k is the
// interval [origin + k*resolution, origin + (k+1)*resolution).
//
// A Clock is a small value, safe to copy and to use from any goroutine; its
// methods allocate nothing. They take the current time as an argument, so
// tests can drive them with a fake clock. The zero value is not usable: make
// one with NewClock.
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
		panic(fmt.Sprintf("packwheel: NewClock: resolution %v must be positive", resolution))
	}
	return Clock{origin: origin, resolution: resolution}
}

// Resolution returns the length of one tick. O(1), no allocation.
func (c Clock) Resolution() time.Duration { return c.resolution }

// Tick returns the tick that t falls in: the one to Advance to at time t.
// Times before the origin map to 0, times past MaxTick to MaxTick.
// O(1), no allocation.
func (c Clock) Tick(t time.Time) uint64 {
	d := t.Sub(c.origin)
	if d <= 0 {
		return 0
	}
	return min(uint64(d/c.resolution), MaxTick)
}

// Deadline returns the first tick that begins at or after now+after: a
// timer scheduled for it never fires before after has passed, and at most
// one resolution plus the caller's advance interval later.
// O(1), no allocation.
func (c Clock) Deadline(now time.Time, after time.Duration) uint64 {
	d := now.Sub(c.origin)
	if after > 0 {
		if d > maxDuration-after {
			return MaxTick
		}
		d += after
	}
	if d <= 0 {
		return 0
	}
	ticks := uint64(d / c.resolution)
	if d%c.resolution != 0 {
		ticks++
	}
	return min(ticks, MaxTick)
}

// Until returns how long after now the tick begins: how long an event loop
// may sleep before advancing to it. It is zero if the tick has begun, and
// saturates rather than overflowing for ticks centuries away.
// O(1), no allocation.
func (c Clock) Until(tick uint64, now time.Time) time.Duration {
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

// maxDuration is the longest time.Duration, where Clock saturates.
const maxDuration = time.Duration(1<<63 - 1)

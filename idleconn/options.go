package idleconn

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// MinResolution is the smallest Options.Resolution, and so the smallest
// Options.Timeout. The reaper ticks four times per Resolution; a finer one
// would make gnet's ticker goroutine wake more often than once per 250µs.
const MinResolution = time.Millisecond

// ticksPerResolution is how many wheel ticks make one Resolution. Closes
// come up to three ticks after Timeout (one for rounding Timeout up to
// ticks, one because activity is stamped with the tick of the loop's latest
// refresh, one for the refresh that sees the expiry), so four keep them
// within Resolution with a tick to spare for scheduling delays.
const ticksPerResolution = 4

// maxTimeoutPerResolution bounds Timeout/Resolution, which sizes each
// loop's hashed wheel and refresh ring (at most 8192 entries each).
const maxTimeoutPerResolution = 1024

// Options configures a Handler. Timeout is required; every other field has
// a usable zero value.
type Options struct {
	// Timeout is how long a connection may receive nothing before the
	// reaper closes it. At least MinResolution.
	Timeout time.Duration

	// Resolution is how late a close may come: an idle connection is
	// closed between Timeout and Timeout+Resolution after its last data,
	// as long as its event loop is not held up for longer than a quarter
	// of Resolution. Zero means Timeout/8, but at least MinResolution;
	// otherwise it must lie between MinResolution and Timeout, and be at
	// least Timeout/1024. A finer Resolution costs more reaper wake-ups,
	// not more work per connection.
	Resolution time.Duration

	// Wheel selects the timer wheel of each event loop. The zero value is
	// Hashed.
	Wheel WheelKind

	// MaxLifetime, if positive, closes a connection that has been open this
	// long even if it is busy, within MaxLifetime+Resolution, so that a
	// client trickling a byte per Timeout cannot hold a slot forever. Zero
	// means no limit.
	MaxLifetime time.Duration

	// OnReap, if not nil, is called just before the reaper closes a
	// connection, with the reason. It runs on the connection's event loop,
	// like the handler's own callbacks, and may use c as they do; it must
	// not block. The wrapped handler's OnClose follows, with a nil error.
	OnReap func(c gnet.Conn, why Reason)
}

// WheelKind selects the timer wheel each event loop uses. Its zero value is
// Hashed.
type WheelKind int

const (
	// Hashed is packwheel.Hashed, with enough slots for one revolution to
	// span Timeout: every timer in the bucket a tick visits is due, so a
	// tick's work is exactly the timers that expire in it.
	Hashed WheelKind = iota
	// Hierarchical is packwheel.Wheel, whose 704 buckets cover any
	// deadline; timers whose deadline is more than 64 ticks away move down
	// a level or two before they fire.
	Hierarchical
)

// String returns "hashed" or "hierarchical", or "WheelKind(N)" for any
// other value.
func (k WheelKind) String() string {
	switch k {
	case Hashed:
		return "hashed"
	case Hierarchical:
		return "hierarchical"
	}
	return fmt.Sprintf("WheelKind(%d)", int(k))
}

// Reason says why the reaper closed a connection. The zero value is not a
// reason; OnReap is only ever given Idle or Lifetime.
type Reason int

const (
	// Idle means the connection received nothing for Timeout.
	Idle Reason = iota + 1
	// Lifetime means the connection was open for MaxLifetime.
	Lifetime
)

// String returns "idle" or "lifetime", or "Reason(N)" for any other value.
func (r Reason) String() string {
	switch r {
	case Idle:
		return "idle"
	case Lifetime:
		return "lifetime"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// config is what a Handler derives from validated Options: durations turned
// into ticks, and the sizes of each loop's structures.
type config struct {
	resolution time.Duration
	tick       time.Duration
	// idleTicks is how many ticks after the tick its last data came in
	// (at the latest) a connection is due: one for that tick, which may
	// have been almost over, plus the Timeout rounded up to ticks.
	idleTicks uint64
	// lifeTicks is the same for MaxLifetime, counted from the tick of the
	// open; 0 means no limit.
	lifeTicks uint64
	wheel     WheelKind
	slots     int // of a hashed wheel
	// ringSize is how many refreshes a loop remembers the ticks of: a
	// power of two of at least idleTicks+2; see loop.idleDue.
	ringSize int
	onReap   func(gnet.Conn, Reason)
}

// newConfig validates opts and derives the config, with errors that name
// the option at fault.
func newConfig(opts Options) (config, error) {
	if opts.Timeout < MinResolution {
		return config{}, fmt.Errorf("idleconn: Timeout %v must be at least %v", opts.Timeout, MinResolution)
	}
	res := opts.Resolution
	switch {
	case res == 0:
		res = max(opts.Timeout/8, MinResolution)
	case res < MinResolution || res > opts.Timeout:
		return config{}, fmt.Errorf("idleconn: Resolution %v must lie between %v and Timeout (%v)", res, MinResolution, opts.Timeout)
	case res < opts.Timeout/maxTimeoutPerResolution:
		return config{}, fmt.Errorf("idleconn: Resolution %v must be at least Timeout/%d (%v)", res, maxTimeoutPerResolution, opts.Timeout/maxTimeoutPerResolution)
	}
	if opts.Wheel != Hashed && opts.Wheel != Hierarchical {
		return config{}, fmt.Errorf("idleconn: Wheel %v is neither Hashed nor Hierarchical", opts.Wheel)
	}
	if opts.MaxLifetime < 0 {
		return config{}, errors.New("idleconn: MaxLifetime must not be negative (zero means no limit)")
	}
	tick := res / ticksPerResolution
	c := config{
		resolution: res,
		tick:       tick,
		idleTicks:  1 + ceilDiv(opts.Timeout, tick),
		wheel:      opts.Wheel,
		onReap:     opts.OnReap,
	}
	if opts.MaxLifetime > 0 {
		c.lifeTicks = 1 + ceilDiv(opts.MaxLifetime, tick)
	}
	// A timer is never scheduled further ahead than the next refresh plus
	// idleTicks, so this many slots make one revolution span it.
	c.slots = pow2AtLeast(c.idleTicks + 2)
	c.ringSize = c.slots
	return c, nil
}

// ceilDiv returns d/unit rounded up, for positive d and unit.
func ceilDiv(d, unit time.Duration) uint64 {
	q := d / unit
	if d%unit != 0 {
		q++
	}
	return uint64(q)
}

// pow2AtLeast returns the smallest power of two >= n, n >= 1.
func pow2AtLeast(n uint64) int {
	return 1 << bits.Len64(n-1)
}

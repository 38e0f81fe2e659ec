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
// would make its driver wake more often than once per 250µs.
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
	// reaper closes it. At least MinResolution. Handler.SetIdleTimeout
	// overrides it per connection.
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
	// means no limit. Handler.SetMaxLifetime overrides it per connection.
	MaxLifetime time.Duration

	// WriteStallTimeout, if positive, closes a connection that has had
	// outbound data pending (gnet's Conn.OutboundBuffered) with none of it
	// drained for this long, within WriteStallTimeout+Resolution, so that
	// a client that stops reading cannot make the server buffer without
	// end. Zero means no limit. Handler.SetWriteStallTimeout overrides it
	// per connection.
	WriteStallTimeout time.Duration

	// MaxConns, if positive, is how many connections the server holds at
	// once: one opened beyond it is closed at once in OnOpen, before the
	// wrapped handler hears of it (neither its OnOpen nor its OnClose is
	// called), counted in Stats.Refused and passed to OnRefuse. Set it
	// so that gnet never fails an accept, which stops its whole engine:
	// below the process's descriptor limit (ulimit -n), less the
	// descriptors the process holds for anything else, less the largest
	// burst of connections arriving at once (up to the listen backlog,
	// net.core.somaxconn), since gnet's main reactor accepts every
	// connection waiting before an event loop's OnOpen can refuse one.
	// Zero means no limit.
	MaxConns int

	// OnRefuse, if not nil, is called with each connection MaxConns
	// refuses, on its event loop, before it is closed; it may write a
	// last message to it.
	OnRefuse func(c gnet.Conn)

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
// reason and is never given to OnReap.
type Reason int

const (
	// Idle means the connection received nothing for Timeout.
	Idle Reason = iota + 1
	// Lifetime means the connection was open for MaxLifetime.
	Lifetime
	// Deadline means the connection's deadline (Handler.SetDeadline)
	// passed.
	Deadline
	// WriteStall means the connection had outbound data pending, none of
	// it drained, for its write stall timeout.
	WriteStall
	// Shed means Handler.CloseIdle closed the connection.
	Shed
)

// reasons is how many Reasons there are: Stats counts each.
const reasons = int(Shed)

// String returns "idle", "lifetime", "deadline", "write stall" or "shed",
// or "Reason(N)" for any other value.
func (r Reason) String() string {
	switch r {
	case Idle:
		return "idle"
	case Lifetime:
		return "lifetime"
	case Deadline:
		return "deadline"
	case WriteStall:
		return "write stall"
	case Shed:
		return "shed"
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
	// open; stallTicks for WriteStallTimeout; 0 means no limit.
	lifeTicks  uint64
	stallTicks uint64
	maxConns   int64
	onRefuse   func(gnet.Conn)
	wheel      WheelKind
	slots      int // of a hashed wheel
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
	if opts.WriteStallTimeout < 0 {
		return config{}, errors.New("idleconn: WriteStallTimeout must not be negative (zero means no limit)")
	}
	if opts.MaxConns < 0 {
		return config{}, errors.New("idleconn: MaxConns must not be negative (zero means no limit)")
	}
	tick := res / ticksPerResolution
	c := config{
		resolution: res,
		tick:       tick,
		idleTicks:  limitTicks(opts.Timeout, tick),
		lifeTicks:  limitTicks(opts.MaxLifetime, tick),
		stallTicks: limitTicks(opts.WriteStallTimeout, tick),
		maxConns:   int64(opts.MaxConns),
		onRefuse:   opts.OnRefuse,
		wheel:      opts.Wheel,
		onReap:     opts.OnReap,
	}
	// A timer is never scheduled further ahead than the next refresh plus
	// idleTicks, so this many slots make one revolution span it.
	c.slots = pow2AtLeast(c.idleTicks + 2)
	c.ringSize = c.slots
	return c, nil
}

// limitTicks returns how many ticks after the tick an event came in a limit
// of d counted from it is due: one for that tick, which may have been
// almost over, plus d rounded up to ticks. It returns 0, no limit, for d 0.
func limitTicks(d, tick time.Duration) uint64 {
	if d == 0 {
		return 0
	}
	return 1 + ceilDiv(d, tick)
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

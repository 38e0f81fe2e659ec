package idleconn

import (
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
// come up to three ticks after their limit (one for rounding the limit up
// to ticks, one because an event is stamped with the tick of the loop's
// latest refresh, one for the refresh that sees the expiry), so four keep
// them within Resolution with a tick to spare for scheduling delays.
const ticksPerResolution = 4

// maxTimeoutPerResolution bounds Timeout/Resolution, which sizes each
// loop's hashed wheel and refresh ring (at most 8192 entries each).
const maxTimeoutPerResolution = 1024

// Defaults of the options whose zero value means a safe bound rather than
// none. They bound what one connection can make the server hold: its
// unconsumed input, its pending output, what the kernel holds unsent for
// it, and how long it keeps the descriptor once the server has asked to
// close it.
const (
	// DefaultMaxInput is Options.MaxInput's default: 1 MiB, sixteen of
	// gnet's 64 KiB reads. As nginx's client_max_body_size, it suits
	// protocols whose messages the server consumes as they arrive.
	DefaultMaxInput = 1 << 20
	// DefaultLinger is Options.Linger's default: how long a connection
	// closed with CloseAfterFlush may stay open, its write side shut,
	// for its peer to close first: the whole wait, as nginx's
	// lingering_time bounds it (30 s there; 5 s is nginx's
	// lingering_timeout, its wait between two reads).
	DefaultLinger = 5 * time.Second
	// DefaultMaxUnsent is Options.MaxUnsent's default: 256 KiB, which
	// kept 1,000 slow readers from stalling another client, as the
	// kernel's own bound let them, at a third of the kernel's memory
	// (bench/results/httpserver-unsent.txt).
	DefaultMaxUnsent = 256 << 10
)

// DefaultOutput is Options.Output's default: Netty's water marks (a
// connection stops being writable above 64 KiB pending and becomes
// writable again at 32 KiB), and a hard cap of 4 MiB, which a handler
// that never asks Writable reaches only by writing faster than its peer
// reads.
var DefaultOutput = OutputLimit{Max: 4 << 20, High: 64 << 10, Low: 32 << 10}

// Options configures a Handler. Timeout is required; every other field has
// a usable zero value, and those that bound memory or descriptors default
// to a safe bound, not to none. The package documentation has the limits
// in a table.
type Options struct {
	// Timeout is how long a connection may be idle before it is closed,
	// reason Idle: receive nothing, and have none of its pending output
	// read by its peer. At least MinResolution.
	// Handler.SetIdleTimeout overrides it per connection.
	Timeout time.Duration

	// Resolution is how late a close may come: an idle connection is
	// closed between Timeout and Timeout+Resolution after its last data,
	// or its peer's last read of output pending in gnet's buffer, as long
	// as its event loop is not held up for longer than a quarter of
	// Resolution. Output in the kernel's send queue is looked at only
	// when the timeout runs out (see Idle), so a peer that stops reading
	// it is closed up to about twice Timeout after its last read. Zero
	// means Timeout/8, but at least MinResolution; otherwise it must lie
	// between MinResolution and Timeout, and be at least Timeout/1024. A
	// finer Resolution costs more reaper wake-ups, not more work per
	// connection.
	Resolution time.Duration

	// Wheel selects the timer wheel of each event loop. The zero value is
	// Hashed.
	Wheel WheelKind

	// MaxLifetime, if positive, closes a connection that has been open this
	// long even if it is busy, within MaxLifetime+Resolution, reason
	// Lifetime, so that a client trickling a byte per Timeout cannot hold
	// a slot forever. Zero means no limit. Handler.SetMaxLifetime
	// overrides it per connection.
	MaxLifetime time.Duration

	// WriteStallTimeout, if positive, closes a connection that has had
	// output pending (gnet's Conn.OutboundBuffered) with none of it
	// drained for this long, within WriteStallTimeout+Resolution, reason
	// WriteStall: a peer that stopped reading. Zero means no limit.
	// Handler.SetWriteStallTimeout overrides it per connection.
	WriteStallTimeout time.Duration

	// MinDrainRate, if positive, closes a connection whose pending output
	// drains fewer than MinDrainRate bytes a second, counted over each
	// DrainWindow during which output stays pending, reason SlowDrain:
	// a peer that reads just enough to escape WriteStallTimeout, as a
	// slow-read attack does. Zero means no limit. Drained bytes are
	// counted at the looks the package takes at the output (see
	// Handler.Writable); writes it does not see, made outside the wrapped
	// handler's callbacks and Timer functions (AsyncWrite, a runnable of
	// your own), restart the count when they make the output grow, and
	// may hide drained bytes when they do not: a server that writes that
	// way should leave MinDrainRate off. It also bounds how slowly a peer
	// may read what the kernel's send queue holds once gnet's buffer has
	// drained into it: an idle timeout that runs out with output there
	// starts over only if the peer read at least this rate over it, or
	// all the queue held when it last ran out (see Idle).
	MinDrainRate int

	// DrainWindow is the span over which MinDrainRate is counted. Zero
	// means 10 s; otherwise at least Resolution. Only valid with
	// MinDrainRate set.
	DrainWindow time.Duration

	// Output bounds each connection's pending output: a handler that asks
	// Handler.Writable stops writing at High and hears from OnWritable at
	// Low; one with more than Max pending is closed, reason OutputFull.
	// The zero value means DefaultOutput. Handler.SetOutputLimit
	// overrides it per connection.
	Output OutputLimit

	// MaxInput bounds each connection's unconsumed input (gnet's
	// Conn.InboundBuffered, checked after each OnTraffic): a connection
	// with more is closed, reason InputFull, so that a peer cannot make the
	// server buffer what its handler leaves unread. Zero means
	// DefaultMaxInput.
	MaxInput int

	// Linger bounds the lingering close Handler.CloseAfterFlush begins:
	// once its output has drained and its write side is shut, a
	// connection whose peer has not closed within Linger is closed,
	// reason Linger. Zero means DefaultLinger.
	Linger time.Duration

	// MaxConns is how many connections the server holds at once: one
	// opened beyond it is closed at once in OnOpen, before the wrapped
	// handler hears of it (neither its OnOpen nor its OnClose is
	// called), counted in Stats.Refused and passed to OnRefuse. It keeps
	// gnet from failing an accept for want of descriptors, which stops
	// its whole engine, so it must lie below the process's descriptor
	// limit (ulimit -n), less the descriptors the process holds for
	// anything else, less the connections accepted before a loop refuses
	// them; New refuses one above DefaultMaxConns(), which leaves that room
	// (and a backlog cut to it would leave a burst waiting). Zero means
	// DefaultMaxConns(), derived that way from the descriptor limit when
	// New runs; a negative value means no limit.
	//
	// How many connections are accepted before a loop refuses them
	// depends on how gnet accepts. Run with gnet.WithReusePort(true) on
	// Linux, each event loop accepts from a listener of its own, one
	// connection at a time, and refuses it before it accepts the next: no
	// burst gets past MaxConns (TestBurstAtFilesLimit: 1,500 dials from 64
	// goroutines under a limit of 256). Without it, gnet's main reactor
	// accepts every connection waiting in the listen queue while the loops
	// refuse, and on Linux idleconn cuts the listen backlog, as the engine
	// starts, to what the descriptor limit leaves beyond MaxConns and the
	// spare descriptors. That makes a stopped engine rarer, not
	// impossible, as the loops must keep up with the main reactor: under a
	// limit of 256, 2,000 dials one after another stopped the engine in
	// every run with gnet's backlog and in none with the cut on a quiet
	// machine, but in 3 runs of 51 beside three busy processes; and under
	// a limit of 1,024, a flood from 64 goroutines stopped it in 2 runs of
	// 3. A server that may meet its descriptor limit wants WithReusePort.
	MaxConns int

	// Budget bounds the bytes buffered for clients over all connections
	// and event loops together: input the handler has left unconsumed plus
	// output pending. From half of it each connection's MaxInput and
	// output Max shrink in proportion, toward 64 KiB and twice
	// Output.High, closing the connections above them, reason OverBudget;
	// at the whole budget new connections are refused (OnRefuse) and the
	// connections holding the most are closed until the total is under
	// nine tenths of it. Stats.Buffered and Stats.Pressure say where it
	// stands, and Handler.UnderPressure when to turn keep-alive off. Zero
	// means DefaultBudget(), derived from the memory the process may use;
	// -1 turns it off. Otherwise it must cover what one connection may
	// keep under pressure: min(MaxInput, 64 KiB) + min(Output.Max,
	// 2*Output.High).
	//
	// The kernel's socket buffers are not in it: what a write leaves in a
	// socket's send queue gnet never holds. MaxUnsent bounds that.
	Budget int64

	// MaxUnsent bounds what the kernel holds unsent in each TCP
	// connection's send queue, on Linux (TCP_NOTSENT_LOWAT, set when the
	// connection opens): a write past it leaves the rest in gnet's
	// buffer, where Output and Budget count it. Without it Linux lets
	// the queue of a peer that reads nothing grow to net.ipv4.tcp_wmem's
	// largest, 4 MiB by default, memory that no RSS shows, which a
	// thousand slow readers can fill the machine's TCP memory with. It
	// does not bound what is in flight, so a fast peer far away still gets
	// a window's worth. What it costs is a fast peer on the same machine,
	// which drains the queue between two looks at its output: a handler
	// that waits for OnWritable hears of it at the next look, from 100 us
	// on, which slows a bulk transfer to it (both measured in
	// bench/results/httpserver-unsent.txt). Zero means DefaultMaxUnsent;
	// -1 leaves the kernel's own bound. Elsewhere than Linux, and on a
	// socket that refuses it (not TCP), the kernel's own bound stands
	// (TestMaxUnsentNetwork).
	MaxUnsent int

	// Overload, if set, shortens idle timeouts as the server fills, so
	// that a full server sheds its idlest connections before it refuses
	// new ones. The zero value turns it off.
	Overload Overload

	// OnRefuse, if not nil, is called with each connection refused, for
	// MaxConns, for the Budget at its whole, or because Handler.Shutdown
	// has begun, on its event loop, before it is closed; it may write a
	// last message to it.
	OnRefuse func(c gnet.Conn)

	// OnReap, if not nil, is called just before the package closes a
	// connection, with the reason. It runs on the connection's event loop,
	// like the handler's own callbacks, and may use c as they do; it must
	// not block. It may run inside another connection's OnTraffic on that
	// loop: when that connection's growth takes the memory budget past its
	// whole, the loop's largest holders are closed before its OnTraffic
	// returns (Handler.OnTraffic). The wrapped handler's OnClose follows.
	OnReap func(c gnet.Conn, why Reason)

	// OnWritable, if not nil, is called on c's event loop when c, found
	// not writable (Handler.Writable), has drained to its low-water mark,
	// so that a handler that stopped writing may go on. It is not called
	// for a connection closing after flush.
	OnWritable func(c gnet.Conn)
}

// OutputLimit bounds a connection's pending output: what gnet holds in
// its outbound buffer because the peer has not yet read it. 0 < Low <=
// High <= Max. The zero value stands for the Handler's default.
type OutputLimit struct {
	// Max is the most output that may be pending: a connection found with
	// more is closed, reason OutputFull.
	Max int
	// High and Low are the water marks of Handler.Writable: above High a
	// connection is not writable, until it has drained to Low.
	High, Low int
}

// Overload shortens idle timeouts as a server with MaxConns nears it, as
// Envoy's overload manager reduces its timeouts: with open connections
// above Start times MaxConns, every idle timeout longer than Floor shrinks
// in proportion, to Floor when MaxConns are open. Stats.IdleScale tells
// how far. The loops apply it in steps, so a connection may be closed as
// late as its timeout shrunk at a scale a 64th higher, with the lateness
// of any idle timeout besides; an open that takes the scale down a step
// wakes the loops to apply it, so that a flood of connections that send
// nothing is shed as well (TestOverloadRandom). The zero value is off.
type Overload struct {
	// Start is the fraction of MaxConns, above 0 and below 1, from which
	// idle timeouts shrink.
	Start float64
	// Floor is the idle timeout with MaxConns open, at least Resolution
	// and at most Timeout.
	Floor time.Duration
}

// WheelKind selects the timer wheel each event loop uses. Its zero value is
// Hashed.
type WheelKind int

const (
	// Hashed is packwheel.Hashed, with enough slots for one revolution to
	// span Timeout: while no connection's limit is later than Timeout,
	// every timer in the bucket a tick visits is due, so a tick's work is
	// exactly the timers that expire in it. A limit further off (a longer
	// SetIdleTimeout, a MaxLifetime with idle off, a long Linger or
	// WriteStallTimeout) waits a revolution or more and is compared once
	// per revolution. BenchmarkReaperTick has the two wheels within about
	// a tenth of each other, neither ahead at both of its sizes
	// (bench/results/idleconn.txt).
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

// config is what a Handler derives from validated Options: durations turned
// into ticks, defaults filled in, and the sizes of each loop's structures.
// Each kind of limit fills in its own fields (limits.go, buffers.go).
type config struct {
	resolution time.Duration
	tick       time.Duration
	// idleTicks is how many ticks after the tick its last data came in
	// (at the latest) a connection is due: one for that tick, which may
	// have been almost over, plus the Timeout rounded up to ticks.
	// lifeTicks, stallTicks, drainTicks and lingerTicks count the same
	// way; 0 means no limit.
	idleTicks, lifeTicks, stallTicks uint64
	drainTicks                       uint64
	drainBytes                       int // to drain per drainTicks; 0 off
	lingerTicks                      uint64
	output                           OutputLimit
	maxInput                         int
	maxUnsent                        int   // 0 for the kernel's own bound
	maxConns                         int64 // 0 for none
	budget                           int64 // 0 for none
	listClass                        int   // the least size class a loop's holders list (buffers.go)
	overload                         overloadConfig
	wheel                            WheelKind
	slots                            int // of a hashed wheel
	// ringSize is how many refreshes a loop remembers the ticks of: a
	// power of two of at least idleTicks+2; see loop.endOf.
	ringSize   int
	onRefuse   func(gnet.Conn)
	onReap     func(gnet.Conn, Reason)
	onWritable func(gnet.Conn)
}

// newConfig validates opts and derives the config, with errors that name
// the option at fault: the clock's options here, then each kind's, in the
// registry's order.
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
	c := config{
		resolution: res,
		tick:       res / ticksPerResolution,
		wheel:      opts.Wheel,
		onRefuse:   opts.OnRefuse,
		onReap:     opts.OnReap,
		onWritable: opts.OnWritable,
	}
	for _, k := range kinds {
		if k.check != nil {
			if err := k.check(&opts, &c); err != nil {
				return config{}, err
			}
		}
	}
	// A timer is never scheduled further ahead than the next refresh plus
	// idleTicks, so this many slots make one revolution span it.
	c.slots = pow2AtLeast(c.idleTicks + 2)
	c.ringSize = c.slots
	return c, nil
}

// optionTicks checks the duration option name, whose zero means zero, and
// returns it in ticks, as limitTicks counts them.
func optionTicks(name, zero string, d, tick time.Duration) (uint64, error) {
	if d < 0 {
		return 0, fmt.Errorf("idleconn: %s must not be negative (zero means %s)", name, zero)
	}
	return limitTicks(d, tick), nil
}

// maxInt is the largest int.
const maxInt = int(^uint(0) >> 1)

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

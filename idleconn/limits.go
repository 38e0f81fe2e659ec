package idleconn

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The limits. Each kind of limit is declared in one place: a kind value
// holding its option's check, how its per-connection state starts, when
// it is due, what it does besides (refuse an open, a pass over a loop's
// connections) and its line in the package documentation's table, with
// the state, setters and functions it names right below it. The kinds
// fed by what a connection buffers (input, output, write stall, drain
// rate, lingering close) are declared in buffers.go, as the one state
// machine they are; the others here. The registry below lists them all;
// adding a kind adds its declaration, a line there (and its Reason, and
// any state it keeps per connection or per loop) and its documentation.
//
// One kind reaches outside its declaration: the memory budget
// (buffers.go), whose accounting is part of every look at what a
// connection buffers, charged in look (hold), relieved in OnTraffic when
// a connection's growth passes the budget, and refunded in release. It
// counts what each look sees rather than acting at a moment of its own,
// and a hook for it on the data path would cost every event an indirect
// call; its actions (refuse, pass, stats) are hooks as the others'.

// Reason says why the package closed a connection. The zero value is not a
// reason and is never given to OnReap.
//
// A connection closed for WriteStall, SlowDrain, OutputFull, InputFull or
// OverBudget, or for Idle with output still pending in gnet's buffer, is
// reset (SO_LINGER 0), as nginx's reset_timedout_connection does: its
// close discards what the kernel still holds to send, and its peer hears
// an RST. Its peer was not reading what it was sent (an idle one read
// none of it for its idle timeout), or it held more than its share, and a
// plain close would leave the kernel sending the rest to a peer that does
// not read it, the socket orphaned in FIN_WAIT1 for as long as the kernel
// keeps retrying, minutes, with its send queue
// (TestAbortFreesKernelMemory). An Idle close whose output has all gone
// into the kernel's send queue, unread, looks at that queue first, on
// Linux: the idle timeout starts over each time the peer has acknowledged
// some of it since the timeout last ran out, and once it has acknowledged
// none (or less than MinDrainRate) for a whole timeout, the close resets
// (see Idle). The other closes are plain, so that what was written before
// them arrives.
type Reason uint8

// The reasons, one per kind of limit that closes; the package
// documentation's table says which option and call set each. Timed limits
// due at the same tick close with the first in this order.
const (
	// Idle means the connection received nothing, and had none of its
	// pending output read, for its idle timeout. Output in the kernel's
	// send queue counts, on Linux: when the timeout runs out with output
	// there that the peer has not acknowledged, it starts over, as long as
	// the peer has acknowledged some since the last time it ran out (with
	// Options.MinDrainRate set, at least that rate over the timeout, or
	// all the queue held then); a peer that has read nothing, or too
	// little, for a whole timeout is reset.
	Idle Reason = iota + 1
	// Deadline means the connection's deadline (Handler.SetDeadline)
	// passed.
	Deadline
	// WriteStall means the connection had output pending, none of it
	// drained, for its write stall timeout.
	WriteStall
	// SlowDrain means the connection's pending output drained slower than
	// Options.MinDrainRate over a DrainWindow.
	SlowDrain
	// Lifetime means the connection was open for its maximum lifetime.
	Lifetime
	// Linger means the connection, closing after flush
	// (Handler.CloseAfterFlush), lingered with its write side shut for
	// Options.Linger without its peer closing.
	Linger
	// OutputFull means the connection had more output pending than its
	// OutputLimit's Max.
	OutputFull
	// InputFull means the connection had more unconsumed input than
	// Options.MaxInput.
	InputFull
	// Shed means Handler.CloseIdle, or one of the passes Handler.Shutdown
	// makes before its context ends, closed the connection between
	// requests.
	Shed
	// Shutdown means the connection was still open when the context given
	// to Handler.Shutdown ended.
	Shutdown
	// OverBudget means the connections buffered so much together that the
	// budget (Options.Budget) closed this one, among those holding the
	// most.
	OverBudget

	endReasons // one past the last Reason
)

// numReasons is how many Reasons there are: Stats counts each.
const numReasons = int(endReasons) - 1

// String returns the reason's name in lower case, as "write stall", or
// "Reason(N)" for a value that is no reason.
func (r Reason) String() string {
	if r != 0 && int(r) <= numReasons {
		return kinds[r-1].name
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// kind is one kind of limit. Every hook may be nil, for none.
type kind struct {
	// why is the Reason it closes with, 0 if it closes nothing itself;
	// name is why's String.
	why  Reason
	name string
	// abort reports whether a close of c with why resets it (Reason);
	// nil for never.
	abort func(c gnet.Conn) bool
	// row is its line in the package documentation's table: the limit,
	// its option (default), the per-connection calls and the reason
	// (TestDocTable).
	row [4]string
	// check validates its options in o, with an error starting
	// "idleconn: " that names the option at fault, and derives its part of
	// c, whose resolution and tick are set.
	check func(o *Options, c *config) error
	// open starts its state for the connection of s, opened at tick now.
	open func(l *loop, s *slot, now uint64)
	// due returns the tick at which it closes s's connection, as the loop
	// stands at tick now, packwheel.MaxTick for none: the connection's
	// timer waits for the earliest of the kinds' (dueOf).
	due func(l *loop, s *slot, now uint64) uint64
	// reprieve is a timed kind's last look before it closes s's
	// connection at tick now (lastLook): true puts the close off, the
	// kind's due having moved on; nil for none.
	reprieve func(l *loop, s *slot, now uint64) bool
	// boot does its work as an engine starts, in OnBoot, before the
	// wrapped handler hears of the engine.
	boot func(h *Handler, eng gnet.Engine)
	// refuse reports whether h must refuse a connection opening now.
	refuse func(h *Handler) bool
	// pass does its work over a loop's connections at each run of the
	// loop's runnable, at tick now, and returns the tick by which it must
	// run again, packwheel.MaxTick if only an event can bring it work.
	pass func(l *loop, now uint64) uint64
	// stats returns st with its part of a snapshot of h filled in (st
	// goes by value: a pointer given to a function value would make each
	// snapshot allocate).
	stats func(h *Handler, st Stats) Stats
}

// kinds is the registry: first the kinds that close, in Reason order
// (kinds[why-1] closes with why), then the others. It is filled in init,
// since the kinds' hooks use it (dueOf). newConfig runs the checks in its
// order, and validation relies on it: the budget's check reads the input
// and output limits that the input and output kinds' checks derived, and
// Overload's the MaxConns that the connection limit's derived.
var kinds []*kind

// always and pending are kind.abort's answers: every close resets, and a
// close resets while output is pending in gnet's buffer.
func always(gnet.Conn) bool    { return true }
func pending(c gnet.Conn) bool { return c.OutboundBuffered() > 0 }

// timedKinds are the kinds a connection's timer waits for, in Reason
// order, which breaks a tie.
var timedKinds []*kind

func init() {
	kinds = []*kind{
		&idleKind, &deadlineKind, &writeStallKind, &drainRateKind, &lifetimeKind, &lingerKind,
		&outputKind, &inputKind, &shedKind, &shutdownKind, &budgetKind,
		&unsentKind, &connectionsKind, &overloadKind,
	}
	for i, k := range kinds {
		if i < numReasons && k.why != Reason(i+1) || i >= numReasons && k.why != 0 {
			panic(fmt.Sprintf("idleconn: kind %q registered out of Reason order", k.name))
		}
		if k.due != nil {
			timedKinds = append(timedKinds, k)
		}
	}
}

// slot is the state of one file descriptor that the data path touches, in
// one cache line, so that loops tracking neighbouring descriptors never
// write to the same line and OnTraffic reads no other: the loop that
// tracks the descriptor's connection, if any, the stamp of its latest
// data, the output pending at the last look and the connection's flags;
// and its timer. The rest of a tracked connection's state, the connection
// itself and its limits, lives in two more lines at a fixed distance in
// the same chunk (lim), read when the timer fires or a limit changes.
// TestSlotLayout guards the layout.
//
// owner is the loop that tracks the descriptor's connection, or nil. Only
// that loop's goroutine reads or writes the other fields, and the limits.
// When a descriptor is closed on one loop and reused on another, the first
// loop's Store(nil) and the second's Load (which sees it) order their
// accesses.
type slot struct {
	owner atomic.Pointer[loop]
	last  stamp // the latest data, or the open, or SetIdleTimeout
	pend  int   // output pending at the last look; 0 for none
	flags slotFlags
	index uint32 // in its chunk, for lim
	timer packwheel.Holder
	held  int // input and output buffered at the last look, charged to the budget
}

// slotFlags are a connection's states that the data path reads.
type slotFlags uint32

const (
	// closing: CloseAfterFlush was called; input is discarded, the
	// wrapped handler hears of no more traffic.
	closing slotFlags = 1 << iota
	// shut: closing, its output drained and its write side shut; it
	// lingers for the peer to close.
	shut
	// unwritable: found above its high-water mark, not yet drained to its
	// low one (Writable).
	unwritable
	// polled: in its loop's list of connections looked at more often
	// than once a tick (buffers.go).
	polled
)

// limits is the rest of a tracked connection's state: the connection,
// and each kind's own. Two lines; see slot.
type limits struct {
	c        gnet.Conn
	idle     uint64 // idle timeout in ticks, like config.idleTicks; 0 off
	deadline uint64 // first tick at or after the deadline; 0 for none
	life     lifetime
	stall    writeStall
	drain    drain
	output   OutputLimit
	// linger is the tick the linger ends, once shut. Before that it is
	// the Idle close's mark (idleLook): the bytes the peer must have
	// acknowledged, counted from the connection's open, when the idle
	// timeout next runs out with output in the kernel's send queue; 0 for
	// none, as a mark is at least 1. The two never meet, as idleLook
	// passes a connection closing after flush by, and sharing the field
	// keeps the struct in its two lines.
	linger uint64
}

// loopLimits is the kinds' state of one event loop, owned by its
// goroutine but for the atomics.
type loopLimits struct {
	// shedAt is the tick of Shutdown's latest pass.
	shedAt uint64
	// idleScale is Stats.IdleScale as of the loop's latest run, and
	// scanStep the overload step (overloadConfig.step) its timers were
	// left at, which the driver reads (wake); overloadScans counts the
	// overload passes that went over the loop's connections, for
	// TestOverloadChurn.
	idleScale     float64
	scanStep      atomic.Int64
	overloadScans int
	// shedFor is the idle time CloseIdle asked for, in nanoseconds, until
	// the runnable takes it; -1 for none.
	shedFor atomic.Int64
	// held is what the loop's connections buffer, the sum of their
	// slot.held, published for the budget's sum over loops; holders are
	// those that buffer, by size class (buffers.go). squeeze is
	// the budget's pressure as the loop last took it, scaled from 0 at
	// half the budget to 1 at the whole; maxIn is MaxInput shrunk by it;
	// passSqueeze is the squeeze of the loop's latest pass; the loop takes
	// the pressure again when held leaves recheckBelow..recheckAbove.
	held                       atomic.Int64
	holders                    holders
	saturated                  bool // the loop's growth took the total over the budget: relieve it
	squeeze, passSqueeze       float64
	maxIn                      int
	recheckBelow, recheckAbove int64
}

// startLimits sets a new loop's state of the kinds.
func (l *loop) startLimits() {
	l.idleScale = 1
	l.shedFor.Store(-1)
	l.maxIn = l.cfg.maxInput
	l.recheckBelow, l.recheckAbove = math.MinInt64, math.MaxInt64
	if l.cfg.budget != 0 {
		l.recheckAbove = l.cfg.budget / 256
	}
}

// Stats is a snapshot of a Handler's state, returned by Handler.Stats.
// The zero value is the state of a Handler with no engine running.
type Stats struct {
	// Loops is the number of event loops with state.
	Loops int
	// Tracked is the number of connections being tracked.
	Tracked int
	// Timers is the number of timers in the loops' wheels, as each loop
	// last published it. Once events settle it equals Tracked, less the
	// connections whose every timed limit is off, which need no timer.
	Timers int
	// Refused counts the connections refused, for MaxConns, the budget or
	// during Shutdown, since New.
	Refused uint64
	// MaxConns is the connection limit in force, Options.MaxConns or its
	// default; 0 for none.
	MaxConns int
	// IdleScale is how far Options.Overload has shortened idle timeouts:
	// 1 not at all, 0 to its Floor, as the count of open connections
	// stands.
	IdleScale float64
	// Budget is the memory budget in force, Options.Budget or its
	// default; 0 for none.
	Budget int64
	// Buffered is what the connections buffer (unconsumed input and
	// pending output), as each loop's latest looks saw it, counted with
	// or without a budget.
	Buffered int64
	// Pressure is Buffered over Budget, 0 with no budget: from 0.5 the
	// connections' limits shrink and Handler.UnderPressure is true, at 1
	// new connections are refused and the largest holders closed.
	Pressure float64
	// reaped counts the connections closed for each Reason, by Reason-1.
	reaped [numReasons]uint64
}

// Reaped returns how many connections the package has closed for why
// since New.
func (s Stats) Reaped(why Reason) uint64 {
	if why == 0 || int(why) > numReasons {
		return 0
	}
	return s.reaped[why-1]
}

// The idle timeout: it counts from the latest data received, stamped by
// the data path in the slot's own line (slot.last), or the latest look
// that found some pending output read by the peer (buffers.go), so that
// OnTraffic moves no timer and a long answer to a peer that reads it is
// not cut: the timer, armed for the due this gives at the time, fires
// early when data came since, and is re-armed for the time left.
// Overload shortens it (overloadedIdle).
var idleKind = kind{
	why: Idle, name: "idle", abort: pending,
	row: [4]string{"idle", "Timeout (required)", "SetIdleTimeout", "Idle"},
	check: func(o *Options, c *config) error {
		c.idleTicks = limitTicks(o.Timeout, c.tick) // Timeout is checked with Resolution
		return nil
	},
	open: func(l *loop, s *slot, _ uint64) { s.lim().idle = l.cfg.idleTicks },
	due: func(l *loop, s *slot, now uint64) uint64 {
		ticks := s.lim().idle
		if ticks == 0 {
			return packwheel.MaxTick
		}
		return l.due(s.last, l.overloadedIdle(ticks), now)
	},
	reprieve: (*loop).idleLook,
}

// idleLook is the look an Idle close takes at the kernel's send queue of
// s's connection, whose idle timeout ran out at tick now: gnet's buffer
// may be empty while the kernel still holds output the peer has not
// acknowledged, which a plain close would leave to an orphaned socket for
// as long as the kernel keeps probing a closed window, minutes, and which
// a peer that reads it slowly must not lose. If the queue holds such
// output, and the peer has kept up since the timeout last ran out (or it
// never has), the timeout starts over, as when a look finds gnet's buffer
// read, and idleLook reports true. Keeping up is reading, by the time
// the timeout runs out again, MinDrainRate's share of the timeout (a
// byte with the rate off), or all the queue held at the last look if that
// is less, as a heartbeat's few bytes are: without the rate, a peer that
// read a byte a timeout would hold its connection for good, where gnet's
// buffer has the drain rate's limit. A peer that has not kept up is reset
// (TestIdleLooksAtKernelQueue; TestAbortFreesKernelMemory's case whose
// gnet buffer is empty). With gnet's buffer holding output, the close
// resets anyway (pending), and with the kernel's queue empty, or not
// known, it stays plain. A connection closing after flush, whose idle
// timeout SetIdleTimeout turned on again, is not looked at: its write
// side may be shut, and limits.linger its linger's end. Two system calls,
// made only when an idle timeout runs out.
func (l *loop) idleLook(s *slot, now uint64) bool {
	m := s.lim()
	if s.flags&closing != 0 || m.c.OutboundBuffered() > 0 {
		return false
	}
	fd := m.c.Fd()
	acked, queued := l.h.unreadQueue(fd)
	switch {
	case queued == 0:
		return false
	case acked < m.linger:
		l.h.abortOnClose(fd)
		return false
	}
	// By the time the timeout runs out again, the peer must have read
	// what the queue holds now, or the drain rate's share of the timeout
	// if that is less: a peer that reads all it is sent, a heartbeat's
	// few bytes say, keeps up whatever the rate.
	m.linger = acked + min(queued, l.drainOver(l.overloadedIdle(m.idle)))
	s.last = settledAt(now)
	return true
}

// SetIdleTimeout sets how long c may be idle (receive nothing, and have
// none of its pending output read) before it is closed, counted from now
// (and from each data received or output read after), in place of
// Options.Timeout; zero turns the idle limit off for c. A keep-alive HTTP
// server sets its long timeout between requests and turns it off while a
// request is being read or answered, which a deadline and the output
// limits bound instead; CloseIdle and Shutdown take a connection whose
// idle timeout is off for one that is busy. It panics, with a message
// starting "idleconn: ", if d is negative, before changing anything. It
// must be called on c's loop: from a handler callback for c, or a runnable
// given to c.EventLoop().Execute. It reports whether c is tracked; false
// means it did nothing, c being untracked, refused, or closed with its
// descriptor reused since. O(1), at most one clock read, no allocation once
// warm.
func (h *Handler) SetIdleTimeout(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetIdleTimeout", c, d)
	if s == nil {
		return false
	}
	s.lim().idle = ticks
	if ticks != 0 {
		s.last = l.stamp()
		h.rearm(s, l)
	}
	return true
}

// The deadline: a point in time, set per request, so no option.
var deadlineKind = kind{
	why: Deadline, name: "deadline",
	row: [4]string{"deadline", "-", "SetDeadline", "Deadline"},
	due: func(_ *loop, s *slot, _ uint64) uint64 {
		if d := s.lim().deadline; d != 0 {
			return d
		}
		return packwheel.MaxTick
	},
}

// SetDeadline closes c at t, however much data it receives, unless it is
// moved or cleared first; the zero time clears it. A deadline already past
// closes c at the loop's next run. A server stops a slowloris client with
// it: set when a request's first byte arrives, cleared when the request is
// complete. While set it also marks c busy for CloseIdle and Shutdown. It
// must be called on c's loop: from a handler callback for c, or a runnable
// given to c.EventLoop().Execute. It reports whether c is tracked; false
// means it did nothing, c being untracked, refused, or closed with its
// descriptor reused since. O(1), at most one clock read, no allocation once
// warm.
func (h *Handler) SetDeadline(c gnet.Conn, t time.Time) bool {
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().deadline = 0
	if !t.IsZero() {
		// The first tick that begins at or after t: never early. Tick 0
		// is the clock's origin, so a deadline there is one already past
		// and moves to tick 1, 0 meaning none.
		s.lim().deadline = max(h.clock.Deadline(t, 0), 1)
		h.rearm(s, l)
	}
	return true
}

// The maximum lifetime, counted from the open.
var lifetimeKind = kind{
	why: Lifetime, name: "lifetime",
	row: [4]string{"lifetime", "MaxLifetime (off)", "SetMaxLifetime", "Lifetime"},
	check: func(o *Options, c *config) (err error) {
		c.lifeTicks, err = optionTicks("MaxLifetime", "no limit", o.MaxLifetime, c.tick)
		return err
	},
	open: func(l *loop, s *slot, now uint64) {
		s.lim().life = lifetime{born: now, ticks: l.cfg.lifeTicks}
	},
	due: func(_ *loop, s *slot, _ uint64) uint64 {
		if m := s.lim().life; m.ticks != 0 {
			return m.born + m.ticks
		}
		return packwheel.MaxTick
	},
}

// lifetime is a connection's lifetime limit.
type lifetime struct {
	born  uint64 // tick of the open
	ticks uint64 // like config.idleTicks, counted from born; 0 off
}

// SetMaxLifetime sets how long c may stay open, counted from its open, in
// place of Options.MaxLifetime; zero turns the limit off for c. A lifetime
// already exceeded closes c at the loop's next run. It panics, with a
// message starting "idleconn: ", if d is negative, before changing
// anything. It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation once warm.
func (h *Handler) SetMaxLifetime(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetMaxLifetime", c, d)
	if s == nil {
		return false
	}
	s.lim().life.ticks = ticks
	h.rearm(s, l)
	return true
}

// Shedding: closing the connections that are between requests, for load
// shedding (CloseIdle, reason Shed) and graceful shutdown (Shutdown,
// below). A connection is between requests when its idle timeout is on,
// no deadline is set, no output is pending and it is not closing: an
// application that reads or answers a request turns its idle timeout off
// or sets a deadline (SetIdleTimeout, SetDeadline), which marks the
// connection busy.
var shedKind = kind{
	why: Shed, name: "shed",
	row: [4]string{"between requests", "-", "CloseIdle", "Shed"},
	pass: func(l *loop, now uint64) uint64 {
		d := time.Duration(l.shedFor.Swap(-1))
		if d < 0 || l.h.shutting.Load() {
			return packwheel.MaxTick // Shutdown's pass closes every connection between requests
		}
		ticks := limitTicks(d, l.cfg.tick)
		l.h.table.each(l, func(s *slot) bool {
			if l.betweenRequests(s) && (ticks == 0 || l.due(s.last, ticks, now) <= now) {
				l.reap(s, Shed)
			}
			return !l.stopped.Load()
		})
		return packwheel.MaxTick
	},
}

// CloseIdle closes, on each event loop, every tracked connection between
// requests that has been idle for at least d: one that has received
// nothing for d (counted like the idle timeout, so from SetIdleTimeout
// too, and known to within Resolution: one idle for less than
// d+Resolution may be spared). CloseIdle(0) closes every connection
// between requests; a larger d sheds load. Safe from any goroutine: it
// only asks each loop, through EventLoop.Execute, and returns before the
// loops have run it; calls that come before a loop runs merge, the latest
// d winning. The closes are counted as Shed. Each loop scans the
// descriptor table: O(descriptors). It panics, with a message starting
// "idleconn: ", if d is negative.
func (h *Handler) CloseIdle(d time.Duration) {
	if d < 0 {
		panic("idleconn: CloseIdle: negative duration " + d.String())
	}
	for _, l := range h.loops.all() {
		l.shedFor.Store(int64(d))
		l.dispatch()
	}
}

// betweenRequests reports whether s's connection is between requests.
func (l *loop) betweenRequests(s *slot) bool {
	m := s.lim()
	return m.idle != 0 && m.deadline == 0 && s.flags&closing == 0 && m.c.OutboundBuffered() == 0
}

// Graceful shutdown: from Shutdown's call, connections are refused, and
// each loop closes its connections between requests (reason Shed) at once
// and then each tick, as others finish their requests; every connection
// still open when Shutdown's context ends is closed, reason Shutdown.
var shutdownKind = kind{
	why: Shutdown, name: "shutdown",
	row:    [4]string{"shutdown", "-", "Shutdown", "Shed, Shutdown"},
	refuse: func(h *Handler) bool { return h.shutting.Load() },
	pass: func(l *loop, now uint64) uint64 {
		if !l.h.shutting.Load() {
			return packwheel.MaxTick
		}
		all := l.h.closeAll.Load()
		if !all && now == l.shedAt {
			return now + 1 // a pass once a tick, not at every poll
		}
		l.shedAt = now
		l.h.table.each(l, func(s *slot) bool {
			switch {
			case all:
				l.reap(s, Shutdown)
			case l.betweenRequests(s):
				l.reap(s, Shed)
			}
			return !l.stopped.Load()
		})
		return now + 1 // and again next tick
	},
}

// Shutdown shuts the server's connections down gracefully, as
// net/http's Server.Shutdown does: from its call, connections opened are
// refused (OnRefuse may answer them), and each loop closes its
// connections between requests, at once and then each tick as others
// finish their requests; ShuttingDown tells handlers to close after their
// current answer (CloseAfterFlush). When ctx ends, every tracked
// connection still open is closed, reason Shutdown, and Shutdown returns ctx's error
// without waiting for the loops; otherwise it returns nil once every
// connection has closed. A connection the wrapped handler untracked is its
// own to close: Shutdown closes none, and returns nil only once they too
// have closed. Stop the engine (gnet.Engine.Stop) after it.
// Safe from any goroutine; it polls the open count every few
// milliseconds. Shutdown lasts until OnShutdown: a Handler then serves
// its next engine afresh.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.shutting.Store(true)
	for _, l := range h.loops.all() {
		l.dispatch()
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for h.open.Load() > 0 {
		select {
		case <-ctx.Done():
			h.closeAll.Store(true)
			for _, l := range h.loops.all() {
				l.dispatch()
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// ShuttingDown reports whether Shutdown has begun: a keep-alive server
// then answers the request in hand with its connection's close (HTTP's
// "Connection: close" and CloseAfterFlush), so that no new request is
// lost to the close. Safe from any goroutine; O(1).
func (h *Handler) ShuttingDown() bool { return h.shutting.Load() }

// The connection limit, counted in Stats.Refused (no Reason: a refused
// connection was never tracked).
var connectionsKind = kind{
	name: "connections",
	row:  [4]string{"connections", "MaxConns (DefaultMaxConns)", "-", "(refused)"},
	check: func(o *Options, c *config) error {
		switch limit := filesLimit(); {
		case o.MaxConns > 0 && limit > 0 && o.MaxConns > DefaultMaxConns():
			// gnet would fail an accept for want of descriptors first,
			// which stops its whole engine; or, with the backlog cut to
			// what is left (boot), a burst would wait for its SYNs'
			// retries however few connections were open.
			return fmt.Errorf("idleconn: MaxConns %d must lie below the open-files limit (ulimit -n), %d, "+
				"less the descriptors held for anything else and a burst of accepts: "+
				"at most DefaultMaxConns(), %d, or raise the limit", o.MaxConns, limit, DefaultMaxConns())
		case o.MaxConns > 0:
			c.maxConns = int64(o.MaxConns)
		case o.MaxConns == 0:
			c.maxConns = int64(DefaultMaxConns())
		}
		return nil
	},
	// gnet's main reactor accepts every connection waiting in the listen
	// queue while the event loops refuse them, so a burst takes
	// descriptors beyond MaxConns. The listener's backlog is set to the
	// room the descriptor limit leaves (burstRoom), which the kernel
	// clamps to net.core.somaxconn (4,096 by default), the backlog gnet
	// asks for: under a small limit, the clients beyond it wait for the
	// kernel to take their connection, retrying, rather than stop the
	// engine with a failed accept. The loops must still keep up with the
	// main reactor, which a burst from one client on a quiet machine lets
	// them do (Options.MaxConns; TestBurstAtFilesLimit). With
	// gnet.WithReusePort the loops accept for themselves, and the backlog
	// stays (limitBacklog).
	boot: func(h *Handler, eng gnet.Engine) {
		if n := filesLimit(); h.cfg.maxConns > 0 && n > 0 {
			limitBacklog(eng, burstRoom(n, int(h.cfg.maxConns)))
		}
	},
	refuse: func(h *Handler) bool {
		return h.open.Load() > h.cfg.maxConns && h.cfg.maxConns > 0
	},
	stats: func(h *Handler, st Stats) Stats {
		st.Refused, st.MaxConns = h.refused.Load(), int(h.cfg.maxConns)
		return st
	},
}

// filesLimit is openFilesLimit; benchmarks of more fake connections than
// the process may open raise it.
var filesLimit = openFilesLimit

// DefaultMaxConns returns Options.MaxConns's default: the process's limit
// on open descriptors (RLIMIT_NOFILE, which Go raises to its hard limit at
// start-up), less an eighth of it, at most 64, for the descriptors a
// server holds besides its connections, less room for a burst of
// connections accepted before an event loop can refuse them: a quarter of
// the limit, at most 4096, the default listen backlog of Linux
// (net.core.somaxconn); where that room is smaller than the backlog, the
// backlog is cut to it as the engine starts, on Linux and without gnet's
// ReusePort (see Options.MaxConns). For a limit of 20,000 it is 15,840;
// for 1,024, 704. Where the limit cannot be read it returns 0, no limit.
// O(1), one system call.
func DefaultMaxConns() int {
	n := filesLimit()
	if n <= 0 {
		return 0
	}
	return max(n-spareFiles(n)-min(n/4, 4096), 1)
}

// spareFiles returns how many of a limit of n descriptors a server keeps
// for anything besides its connections: an eighth, at most 64.
func spareFiles(n int) int { return min(n/8, 64) }

// burstRoom returns the listen backlog that a limit of n descriptors
// leaves room for beyond maxConns connections and the spare descriptors:
// at least a quarter of n, or 4,096, for a maxConns New took (at most
// DefaultMaxConns), and at least 1 for a limit lowered since.
func burstRoom(n, maxConns int) int { return max(n-spareFiles(n)-maxConns, 1) }

// Idle timeouts under load: Options.Overload shortens them as the count
// of open connections nears MaxConns. Its closes are the idle limit's.
var overloadKind = kind{
	name: "idle under load",
	row:  [4]string{"idle under load", "Overload (off)", "-", "Idle"},
	check: func(o *Options, c *config) error {
		if o.Overload == (Overload{}) {
			return nil
		}
		switch {
		case c.maxConns <= 0:
			return fmt.Errorf("idleconn: Overload needs a MaxConns limit")
		case !(o.Overload.Start > 0 && o.Overload.Start < 1):
			return fmt.Errorf("idleconn: Overload.Start %v must lie strictly between 0 and 1", o.Overload.Start)
		case o.Overload.Floor < c.resolution || o.Overload.Floor > o.Timeout:
			return fmt.Errorf("idleconn: Overload.Floor %v must lie between Resolution (%v) and Timeout (%v)",
				o.Overload.Floor, c.resolution, o.Timeout)
		}
		start := min(max(int64(o.Overload.Start*float64(c.maxConns)), 1), c.maxConns-1)
		c.overload = overloadConfig{start: start, span: float64(c.maxConns - start),
			floorTicks: limitTicks(o.Overload.Floor, c.tick)}
		return nil
	},
	// When the scale has fallen two steps (overloadConfig.step) below the
	// one the loop's timers were left at, the pass closes the connections
	// already idle for their shortened timeout and brings the others'
	// timers forward: each connection's timer was armed for its timeout
	// as it was. A rise of the scale lowers that step to one above the
	// new one, so that a count of connections that goes back and forth
	// across a step's edge runs no pass: a pass is O(descriptors), and
	// without this a server whose connections come and go at an edge ran
	// one every tick (TestOverloadChurn). A timer armed at a scale up to
	// two steps higher than the present one, 2/128, makes a close late by
	// at most a 64th of the shrinkable timeout. An open that takes the
	// scale down a step nudges the driver, which sends every loop two
	// steps behind it its runnable (wake), so that a flood of connections
	// that send nothing, which wakes no loop by itself, is reaped at the
	// shortened timeouts (TestOverloadRandom's silent rounds).
	pass: func(l *loop, now uint64) uint64 {
		if l.cfg.overload.start == 0 {
			return packwheel.MaxTick
		}
		open := l.h.open.Load()
		l.idleScale = l.cfg.overload.idleScale(open)
		step := l.cfg.overload.step(open)
		if step <= l.scanStep.Load()+1 {
			// Timers armed too early re-arm.
			l.scanStep.Store(min(l.scanStep.Load(), step+1))
			return packwheel.MaxTick
		}
		l.scanStep.Store(step)
		l.overloadScans++
		l.h.table.each(l, func(s *slot) bool {
			due, why := l.dueOf(s, now)
			if due <= now {
				due, why = l.lastLook(s, due, why, now)
			}
			if due <= now {
				l.reap(s, why)
			} else {
				l.arm(s, due, now)
			}
			return !l.stopped.Load()
		})
		return packwheel.MaxTick
	},
	stats: func(h *Handler, st Stats) Stats {
		st.IdleScale = h.cfg.overload.idleScale(h.open.Load())
		return st
	},
}

// overloadConfig is Options.Overload in connections and ticks.
type overloadConfig struct {
	start      int64   // open connections from which idle timeouts shrink; 0 off
	span       float64 // maxConns - start
	floorTicks uint64
}

// idleScale returns how far idle timeouts are shrunk with open
// connections: 1 not at all, 0 to the floor.
func (c *overloadConfig) idleScale(open int64) float64 {
	if c.start == 0 || open <= c.start {
		return 1
	}
	return max(1-float64(open-c.start)/c.span, 0)
}

// overloadSteps is how many steps the scale falls by from Start to
// MaxConns: the loops' passes run every two of them, which bounds how
// many run as the server fills and how late a close may come (the
// overload pass).
const overloadSteps = 128

// step returns how many whole steps of 1/overloadSteps the scale has
// fallen by with open connections: 0 up to Start, overloadSteps from
// MaxConns.
func (c *overloadConfig) step(open int64) int64 {
	if c.start == 0 || open <= c.start {
		return 0
	}
	return min(int64(float64(open-c.start)/c.span*overloadSteps), overloadSteps)
}

// overloadedIdle returns an idle timeout of ticks, shrunk by the loop's
// current scale toward the floor.
func (l *loop) overloadedIdle(ticks uint64) uint64 {
	floor := l.cfg.overload.floorTicks
	if l.idleScale == 1 || ticks <= floor {
		return ticks
	}
	return floor + uint64(l.idleScale*float64(ticks-floor))
}

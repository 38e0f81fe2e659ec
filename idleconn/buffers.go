package idleconn

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// What a connection buffers: the input its handler has left unconsumed,
// and the output its peer has not read yet, which gnet holds in the
// connection's outbound buffer. The limits fed by them are one state
// machine, declared here: a connection's output is writable until it
// passes its high-water mark, then not writable until it drains to its
// low one (Writable, OnWritable); while output is pending it must drain,
// some of it within the write stall timeout and enough of it over each
// drain-rate window; a connection closing after flush drains, shuts its
// write side and lingers; and input and output each have a maximum.
//
// The package looks at what a connection buffers (look) on the data path
// before the wrapped handler, if output was pending, and after, if
// anything is buffered; before and after a Timer's function; each tick
// while output is pending, when the connection's timer fires; and, while
// a connection is not writable or is closing with output left, at polls
// that begin a millisecond after and back off to the tick. Input grows
// only by reads, each followed by OnTraffic, which checks it after the
// wrapped handler. Each look charges what changed to the memory budget,
// which bounds what all connections buffer together (budgetKind).

// The unconsumed input: gnet reads whatever arrives and keeps what the
// handler leaves unconsumed, so a peer that sends faster than the handler
// consumes (or a handler waiting on something else, as an HTTP server
// answering a slow request) would grow the inbound buffer without end.
var inputKind = kind{
	why: InputFull, name: "input full", abort: always,
	row: [4]string{"unconsumed input", "MaxInput (1 MiB)", "-", "InputFull"},
	check: func(o *Options, c *config) error {
		if o.MaxInput < 0 {
			return errors.New("idleconn: MaxInput must not be negative (zero means DefaultMaxInput)")
		}
		c.maxInput = cmp.Or(o.MaxInput, DefaultMaxInput)
		return nil
	},
}

// The pending output's maximum, per connection (OutputLimit.Max), beside
// its water marks.
var outputKind = kind{
	why: OutputFull, name: "output full", abort: always,
	row: [4]string{"pending output", "Output (DefaultOutput)", "SetOutputLimit", "OutputFull"},
	check: func(o *Options, c *config) error {
		c.output = o.Output
		if c.output == (OutputLimit{}) {
			c.output = DefaultOutput
			return nil
		}
		return c.output.check("Output")
	},
	open: func(l *loop, s *slot, _ uint64) { s.lim().output = l.cfg.output },
}

// What the kernel holds unsent, per connection (Options.MaxUnsent): the
// send queue beyond gnet's buffer, which nothing else here bounds.
var unsentKind = kind{
	name: "unsent output",
	row:  [4]string{"unsent in the kernel", "MaxUnsent (256 KiB)", "-", "-"},
	check: func(o *Options, c *config) error {
		switch {
		case o.MaxUnsent == 0:
			c.maxUnsent = DefaultMaxUnsent
		case o.MaxUnsent < -1:
			return fmt.Errorf("idleconn: MaxUnsent %d: want bytes, 0 for DefaultMaxUnsent or -1 for the kernel's own bound", o.MaxUnsent)
		case o.MaxUnsent > 0:
			c.maxUnsent = o.MaxUnsent
		}
		return nil
	},
	open: func(l *loop, s *slot, _ uint64) {
		if n := l.cfg.maxUnsent; n != 0 {
			l.h.boundUnsent(s.lim().c.Fd(), n)
		}
	},
}

// check returns an error naming what, starting "idleconn: ", if o is not
// a valid limit.
func (o OutputLimit) check(what string) error {
	if o.Low <= 0 || o.Low > o.High || o.High > o.Max {
		return fmt.Errorf("idleconn: %s %+v: want 0 < Low <= High <= Max", what, o)
	}
	return nil
}

// Writable reports whether c may take more output: false once its pending
// output has exceeded its high-water mark, until it has drained to its low
// one, when Options.OnWritable is called. A handler that answers pipelined
// requests stops while it is false, so that a peer that does not read
// cannot make it buffer without end. It must be called on c's loop, from a
// handler callback or a runnable; for a connection not tracked it compares
// the pending output with Options.Output's High. O(1), no allocation
// once warm.
func (h *Handler) Writable(c gnet.Conn) bool {
	p := c.OutboundBuffered()
	s, l := h.tracking(c)
	if s == nil {
		return p <= h.cfg.output.High
	}
	l.look(s, c, p, l.lastTick(), true) // a Max exceeded closes c at the next run
	return s.flags&unwritable == 0
}

// SetOutputLimit sets c's output limit in place of Options.Output; the
// zero OutputLimit restores the Handler's. A connection already above the
// new Max is closed at the loop's next run. It panics, with a message
// starting "idleconn: ", if o is neither zero nor a valid limit, before
// changing anything. It must be called on c's loop: from a handler
// callback for c, or a runnable given to c.EventLoop().Execute. It reports
// whether c is tracked; false means it did nothing, c being untracked,
// refused, or closed with its descriptor reused since. O(1), at most one
// clock read, no allocation once warm.
func (h *Handler) SetOutputLimit(c gnet.Conn, o OutputLimit) bool {
	if o == (OutputLimit{}) {
		o = h.cfg.output
	} else if err := o.check("SetOutputLimit:"); err != nil {
		panic(err.Error())
	}
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().output = o
	l.look(s, c, c.OutboundBuffered(), l.lastTick(), true)
	return true
}

// The write stall: it counts from the latest look that found output
// beginning to pend or some drained. A connection closing after flush
// whose write stall timeout is off must still drain: at least some of its
// output every idle timeout, since it no longer has one of its own.
var writeStallKind = kind{
	why: WriteStall, name: "write stall", abort: always,
	row: [4]string{"write stall", "WriteStallTimeout (off)", "SetWriteStallTimeout", "WriteStall"},
	check: func(o *Options, c *config) (err error) {
		c.stallTicks, err = optionTicks("WriteStallTimeout", "no limit", o.WriteStallTimeout, c.tick)
		return err
	},
	open: func(l *loop, s *slot, _ uint64) { s.lim().stall = writeStall{ticks: l.cfg.stallTicks} },
	due: func(l *loop, s *slot, now uint64) uint64 {
		m := s.lim()
		ticks := m.stall.ticks
		if ticks == 0 && s.flags&closing != 0 {
			ticks = l.cfg.idleTicks
		}
		if ticks == 0 || s.pend == 0 {
			return packwheel.MaxTick
		}
		return l.due(m.stall.since, ticks, now)
	},
}

// writeStall is a connection's write stall limit.
type writeStall struct {
	ticks uint64 // like config.idleTicks; 0 off
	since stamp  // the latest progress, while output is pending
}

// SetWriteStallTimeout sets how long c may have output pending with none
// of it drained before it is closed, in place of
// Options.WriteStallTimeout; zero turns the limit off for c. Pending
// output counts from this call if some is pending, and any drain seen at a
// later look restarts the count: output written outside the package's
// sight is seen at the next look. While output is pending the connection's
// timer fires each tick (a quarter of Resolution) to look, so that the
// count restarts at the drain itself (TestWriteStall). It panics, with a
// message starting "idleconn: ", if d is negative, before changing
// anything. It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most two clock reads,
// no allocation once warm.
func (h *Handler) SetWriteStallTimeout(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetWriteStallTimeout", c, d)
	if s == nil {
		return false
	}
	s.lim().stall.ticks = ticks
	s.pend = 0 // count from now
	l.look(s, c, c.OutboundBuffered(), h.clock.Tick(h.now()), true)
	return true
}

// The drain rate: while output stays pending, the looks add up what
// drained since the window began; a window that ends with less than its
// share drained closes the connection, one with enough begins the next
// (rollDrain). The window counts from a stamp and ends at a tick seen by
// the reaper, so it is never shorter than DrainWindow.
var drainRateKind = kind{
	why: SlowDrain, name: "slow drain", abort: always,
	row: [4]string{"drain rate", "MinDrainRate (off)", "-", "SlowDrain"},
	check: func(o *Options, c *config) error {
		switch {
		case o.DrainWindow < 0:
			return errors.New("idleconn: DrainWindow must not be negative (zero means 10s)")
		case o.MinDrainRate < 0:
			return errors.New("idleconn: MinDrainRate must not be negative (zero means no limit)")
		case o.DrainWindow != 0 && o.MinDrainRate == 0:
			return errors.New("idleconn: DrainWindow is set but MinDrainRate is not")
		case o.DrainWindow != 0 && o.DrainWindow < c.resolution:
			return fmt.Errorf("idleconn: DrainWindow %v must be at least Resolution (%v)", o.DrainWindow, c.resolution)
		case o.MinDrainRate == 0:
			return nil
		}
		window := cmp.Or(o.DrainWindow, 10*time.Second)
		c.drainTicks = limitTicks(window, c.tick)
		c.drainBytes = drainShare(o.MinDrainRate, window)
		return nil
	},
	due: func(l *loop, s *slot, now uint64) uint64 {
		if l.cfg.drainBytes == 0 || s.pend == 0 {
			return packwheel.MaxTick
		}
		return l.due(s.lim().drain.start, l.cfg.drainTicks, now)
	},
}

// drainOver returns the bytes a peer must read over ticks to keep up
// MinDrainRate, rounded up: the drain rate's share of DrainWindow, scaled
// to ticks; at least 1, so that with the rate off it is whether the peer
// read anything. idleLook asks it of the kernel's send queue.
func (l *loop) drainOver(ticks uint64) uint64 {
	if l.cfg.drainBytes == 0 {
		return 1
	}
	need := math.Ceil(float64(l.cfg.drainBytes) * float64(ticks) / float64(l.cfg.drainTicks))
	return max(uint64(min(need, math.MaxUint64/2)), 1)
}

// drain is a connection's drain-rate window.
type drain struct {
	start   stamp
	drained int // bytes drained since start
}

// rollDrain begins the next window of s, as the loop stands at tick now,
// if the current one has ended with enough drained.
func (l *loop) rollDrain(s *slot, now uint64) {
	m := &s.lim().drain
	if l.cfg.drainBytes != 0 && s.pend != 0 && m.drained >= l.cfg.drainBytes &&
		l.due(m.start, l.cfg.drainTicks, now) <= now {
		*m = drain{start: l.stamp()}
	}
}

// The lingering close: gnet's own close (returning gnet.Close, or
// EventLoop.Close) writes what the socket takes at once and drops the
// rest, and closing a socket that still has unread input makes the kernel
// send a reset, which can destroy the response the peer has not read yet.
// nginx's answer, taken here: let the output drain, shut the write side
// so the peer reads the end of the response, then read and discard until
// the peer closes, for a bounded time.
var lingerKind = kind{
	why: Linger, name: "linger",
	row: [4]string{"lingering close", "Linger (5 s)", "CloseAfterFlush", "Linger"},
	check: func(o *Options, c *config) (err error) {
		c.lingerTicks, err = optionTicks("Linger", "DefaultLinger", cmp.Or(o.Linger, DefaultLinger), c.tick)
		return err
	},
	due: func(_ *loop, s *slot, _ uint64) uint64 {
		if s.flags&shut != 0 {
			return s.lim().linger
		}
		return packwheel.MaxTick
	},
}

// CloseAfterFlush closes c once its pending output has drained: from this
// call the wrapped handler hears of no more traffic for c (its input is
// discarded), c's idle timeout and deadline are off, and its output must
// keep draining under the write stall timeout (or, if that is off, some
// every idle timeout), the drain rate and Max; once drained, c's write
// side is shut, and c stays open, discarding input, until the peer closes
// or Options.Linger has passed (reason Linger). Write nothing to c after
// it, and return gnet.None, not gnet.Close, from the callback that calls
// it. It must be called on c's loop, from a handler callback or a
// runnable, and reports false, doing nothing, if c is not tracked. O(1),
// no allocation once warm.
func (h *Handler) CloseAfterFlush(c gnet.Conn) bool {
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	if s.flags&closing != 0 {
		return true
	}
	s.flags |= closing
	m := s.lim()
	m.idle, m.deadline = 0, 0
	l.look(s, c, c.OutboundBuffered(), h.clock.Tick(h.now()), true) // over Max: the next run closes it
	return true
}

// observe is look, followed by OnWritable if the look found c drained to
// its low-water mark.
func (l *loop) observe(s *slot, c gnet.Conn, p int, now uint64, after bool) Reason {
	was := s.flags & unwritable
	why := l.look(s, c, p, now, after)
	if why == 0 && was != 0 && s.flags&(unwritable|closing) == 0 {
		if f := l.cfg.onWritable; f != nil {
			f(c)
		}
	}
	return why
}

// look is the state machine's step: it takes p as the output now pending
// on c, the connection in s, as the loop stands at tick now, charges what
// c buffers to the budget, and reports the limit it exceeds (OutputFull,
// InputFull, OverBudget), or 0. after says that the package saw the
// writes that may have come since the last look (a handler callback or a
// Timer's function ran since), so that growth is expected; growth at any
// other look comes from a write the package did not see. A connection
// with no output pending, now or at the last look, and not closing, has
// no output state to step: its look reads no line but its slot's
// (BenchmarkOnTraffic's buffering case).
func (l *loop) look(s *slot, c gnet.Conn, p int, now uint64, after bool) (why Reason) {
	in := c.InboundBuffered()
	if held := in + p; held != s.held {
		l.hold(s, held)
	}
	due := uint64(packwheel.MaxTick)
	if p|s.pend != 0 || s.flags&closing != 0 {
		due = l.step(s, p, now, after)
		if p > s.lim().output.Max {
			why = OutputFull
		}
	}
	if why == 0 {
		// Input is left unconsumed by a callback: it is checked after one.
		switch {
		case after && in > l.cfg.maxInput:
			why = InputFull
		case l.overBudget(s, in, p, after):
			why = OverBudget
		}
	}
	if why != 0 {
		// The caller closes the connection, or, if it cannot (Writable,
		// a setter), the next run's look finds the limit passed again
		// (TestOutputFullUnseen).
		due = now
	}
	l.arm(s, due, now)
	return why
}

// step moves s's output state to p pending, as look found it, and
// returns the tick by which the connection must be looked at again.
func (l *loop) step(s *slot, p int, now uint64, after bool) (due uint64) {
	m := s.lim()
	prev := s.pend
	s.pend = p
	switch {
	case p < prev:
		// Progress: the peer read, which counts as activity for the idle
		// timeout as data received does, so that a long answer to a
		// peer that reads is not cut.
		st := l.stamp()
		s.last, m.stall.since = st, st
		m.drain.drained += prev - p
	case p == 0:
	case prev == 0: // pending from now
		st := l.stamp()
		m.stall.since, m.drain = st, drain{start: st}
	case p > prev && !after:
		// Grown by a write the package did not see, which hides how much
		// drained: the drain rate counts afresh, never early. The stall
		// goes on: some may have drained, but the peer that stopped
		// reading while the server writes from elsewhere must not escape.
		m.drain = drain{start: l.stamp()}
	}
	l.rollDrain(s, now)
	switch {
	case p > m.output.High:
		if s.flags&unwritable == 0 {
			s.flags |= unwritable
			l.startPoll(s)
		}
	case p <= m.output.Low:
		s.flags &^= unwritable
	}
	switch {
	case p != 0:
		if s.flags&(closing|shut) == closing {
			l.startPoll(s)
		}
		return now + 1 // and each tick while output is pending
	case s.flags&(closing|shut) == closing:
		return l.shutWrite(s, now)
	}
	return packwheel.MaxTick
}

// shutWrite shuts the write side of s's connection, whose output has
// drained, and lets it linger from tick now: it returns the tick the
// linger ends.
func (l *loop) shutWrite(s *slot, now uint64) uint64 {
	s.flags |= shut
	m := s.lim()
	m.linger = now + 1 + l.cfg.lingerTicks
	if l.h.shutdownWrite(m.c.Fd()) != nil {
		m.linger = now // the peer is gone: close at the next run
	}
	return m.linger
}

// Stamps say when data came or output drained, without reading the
// clock: the data path records the loop's epoch, which counts the refreshes that saw the
// clock at a new tick (loop.ring holds each recent epoch's tick). An event
// stamped with epoch e came after the refresh of e began and before the
// refresh of e+1 did, so before the end of that refresh's tick. A limit
// counted from it is due that many ticks after that end: late by up to a
// tick, never early. Once e+1 has begun, settle turns the stamp into that
// tick, so that it no longer depends on the ring, which forgets old
// epochs.
type stamp struct {
	epoch uint64 // stampSettled once settled into at
	at    uint64 // the tick before whose end the event came, once settled
}

// stampSettled is the epoch of a stamp settled into a tick.
const stampSettled = math.MaxUint64

// settledAt returns a stamp for an event before the end of tick t.
func settledAt(t uint64) stamp { return stamp{epoch: stampSettled, at: t} }

// stamp returns a stamp for an event happening now, and makes sure a
// refresh will end the epoch.
func (l *loop) stamp() stamp { return stamp{epoch: l.stampNow()} }

// stampNow returns the current epoch, to stamp an event happening now,
// and makes sure a refresh will end it.
func (l *loop) stampNow() uint64 {
	if !l.busy.Load() {
		l.markBusy()
	}
	return l.epoch
}

// markBusy records that the current epoch holds a stamp and wakes the
// driver, which refreshes the loop at the next tick.
func (l *loop) markBusy() {
	l.busy.Store(true)
	l.h.nudge()
}

// due returns the tick at which a limit of ticks counted from the event
// st stamps is reached, as the loop stands at tick now.
//
// An event stamped with the current epoch came after the latest refresh:
// its limit is estimated from the next tick and checked again when the
// timer fires. A stamp older than the ring counts from the oldest refresh
// remembered, which is later than the truth: late, never early. arm's
// horizon keeps stamps from growing that old before expire settles them.
func (l *loop) due(st stamp, ticks, now uint64) uint64 {
	switch {
	case st.epoch == stampSettled:
		return st.at + ticks
	case st.epoch >= l.epoch:
		return now + 1 + ticks
	}
	return l.endOf(st.epoch) + ticks
}

// endOf returns the tick of the refresh that ended epoch e, an epoch
// before the current one; for one older than the ring, the oldest refresh
// remembered.
func (l *loop) endOf(e uint64) uint64 {
	next := e + 1
	if oldest := l.epoch - l.mask; l.epoch >= l.mask && next < oldest {
		next = oldest
	}
	return l.ring[next&l.mask]
}

// settle turns *st into a tick once its epoch has ended.
func (l *loop) settle(st *stamp) {
	if st.epoch != stampSettled && st.epoch < l.epoch {
		*st = settledAt(l.endOf(st.epoch))
	}
}

// Polls look at a connection's output more often than its timer does, so
// that a handler waiting for OnWritable, or a lingering close waiting to
// shut the write side, hears of a fast peer's drain within about a tenth
// of a millisecond rather than a tick: a peer that reads at memory speed
// would otherwise idle for most of each tick. gnet says nothing when a
// socket drains, so the first poll's gap bounds a fast peer's throughput
// at what its socket and gnet hold per gap: with the examples' send queue
// bounded to 256 KiB (-max-unsent), one reader on the same machine took
// 192 MiB in 0.70 s with a first gap of 1 ms and 0.16 s with 100 us
// (bench/results/httpserver-unsent.txt). A poll backs off, doubling its
// gap, so that a slow peer costs about as much as the tick's look, which
// takes over once the gap reaches a tick: the shorter first gap costs it
// three more looks.
const pollFirst = 100 * time.Microsecond

// noPoll is loop.pollAt's value when no poll is due.
const noPoll = 1<<63 - 1

// poll is a connection in its loop's poll list: when it is due, in
// nanoseconds after the clock's origin, and its gap since the last.
type poll struct {
	s       *slot
	at, gap time.Duration
}

// startPoll puts s in the loop's poll list, unless it is there already
// or the tick is finer than a poll.
func (l *loop) startPoll(s *slot) {
	if s.flags&polled != 0 || l.cfg.tick <= pollFirst {
		return
	}
	s.flags |= polled
	at := l.h.sinceOrigin(l.h.now()) + pollFirst
	l.polls = append(l.polls, poll{s: s, at: at, gap: pollFirst})
	if int64(at) < l.pollAt.Load() {
		l.pollAt.Store(int64(at))
		l.h.nudge()
	}
}

// runPolls looks at the polled connections that are due at t, nanoseconds
// after the clock's origin, and tick now; it drops those whose writability
// or lingering close is settled, or whose gap has reached a tick.
func (l *loop) runPolls(t time.Duration, now uint64) {
	if len(l.polls) == 0 || int64(t) < l.pollAt.Load() {
		return
	}
	next := time.Duration(noPoll)
	kept := l.polls[:0]
	for _, p := range l.polls {
		s := p.s
		if s.owner.Load() != l || s.flags&polled == 0 {
			continue // released, and maybe taken by another loop
		}
		if p.at <= t {
			c := s.conn()
			if why := l.observe(s, c, c.OutboundBuffered(), now, false); why != 0 {
				l.reap(s, why)
				continue
			}
			if s.owner.Load() != l || s.conn() != c {
				continue
			}
			p.gap *= 2
			p.at = t + p.gap
			if s.flags&unwritable == 0 && s.flags&(closing|shut) != closing || p.gap >= l.cfg.tick {
				s.flags &^= polled
				continue
			}
		}
		next = min(next, p.at)
		kept = append(kept, p)
	}
	clear(l.polls[len(kept):])
	l.polls = kept
	l.pollAt.Store(int64(next))
	if next != noPoll {
		l.h.nudge() // the driver sleeps until the next poll too
	}
}

// The budget: the bytes all connections buffer together, unconsumed input
// plus pending output, which the per-connection limits bound only one by
// one. Its actions follow Envoy's overload manager, with the buffered
// total over the budget as the pressure: from half the budget (Envoy's
// scaling threshold) to the whole (its saturation), each connection's
// input and output maximum shrink in proportion toward a floor, as
// Envoy's reduce_timeouts scales a timer, so that the connections holding
// the most are closed first, as its reset_high_memory_stream resets the
// streams in its largest buckets first; at the whole budget new
// connections are refused, as its tcp_listener_accept load shed point
// does, and the loop whose growth passed the budget closes the largest
// holders at once, from its data path, down to nine tenths of it (by its
// runnable's turn a batch of reads, up to 64 KiB from each of a thousand
// connections, could have passed it), and each loop's pass does the same
// with its share, then closes those past their shrunk limits (shed),
// which each look checks too. A loop finds its largest holders in its lists of
// holders by size class (holders), as Envoy's buckets, so that relief
// costs the size classes and the closes, never a walk of the descriptor
// table (BenchmarkRelief). A keep-alive server turns keep-alive off
// under pressure (UnderPressure), as Envoy's disable_http_keepalive
// does. Every close is OverBudget, the per-connection limits' own reasons
// staying for a connection past the limit it would have without the
// budget.
//
// The accounting is exact without a lock: each connection's bytes as its
// latest look saw them (slot.held) are summed per loop (loop.held), which
// only the loop writes, and the loops' sums are added where they are
// read. A loop takes the pressure afresh when its own sum has moved by a
// step since it last did, and at each run; the data path pays nothing
// for it when a connection buffers nothing, the common case
// (BenchmarkOnTraffic), and when it does, a charge to the loop's sum and
// its size class's, with a move between lists only for the largest
// holders (BenchmarkOnTraffic's buffering case).
var budgetKind = kind{
	why: OverBudget, name: "over budget", abort: always,
	row: [4]string{"memory budget", "Budget (DefaultBudget)", "-", "OverBudget"},
	check: func(o *Options, c *config) error {
		floor := int64(min(c.maxInput, budgetInputFloor) + min(c.output.Max, 2*c.output.High))
		switch {
		case o.Budget == 0:
			c.budget = max(DefaultBudget(), floor)
		case o.Budget == -1:
			return nil
		case o.Budget < 0:
			return fmt.Errorf("idleconn: Budget %d: want bytes, 0 for DefaultBudget() or -1 for none", o.Budget)
		case o.Budget < floor:
			return fmt.Errorf("idleconn: Budget %d must be at least %d, what one connection may keep under pressure "+
				"(MaxInput's floor and twice Output.High)", o.Budget, floor)
		default:
			c.budget = o.Budget
		}
		c.listClass = sizeClass(int(min(int64(min(c.maxInput, budgetInputFloor)), max(c.budget/1024, 1))))
		return nil
	},
	refuse: func(h *Handler) bool { return h.cfg.budget != 0 && h.buffered() >= h.cfg.budget },
	pass: func(l *loop, now uint64) uint64 {
		if l.cfg.budget == 0 {
			return packwheel.MaxTick
		}
		used := l.takePressure()
		if l.squeeze < l.passSqueeze+1.0/64 && used <= l.cfg.budget {
			l.passSqueeze = min(l.passSqueeze, l.squeeze)
			return packwheel.MaxTick
		}
		l.passSqueeze = l.squeeze
		l.relieve(used, nil)
		l.shed()
		return packwheel.MaxTick
	},
	stats: func(h *Handler, st Stats) Stats {
		st.Budget, st.Buffered = h.cfg.budget, h.buffered()
		if st.Budget != 0 {
			st.Pressure = float64(st.Buffered) / float64(st.Budget)
		}
		return st
	},
}

// budgetInputFloor is how far the budget's pressure shrinks MaxInput: a
// read's worth (gnet reads up to 64 KiB at a time), so that a handler
// that consumes what it is given is never closed for its input. Output
// shrinks to twice its high-water mark: a handler that asks Writable
// keeps about High plus one write pending.
const budgetInputFloor = 64 << 10

// hold records that s's connection buffers n bytes: it charges the
// change to the loop's sum and, with a budget, moves s to n's size class
// among the loop's holders. O(1).
func (l *loop) hold(s *slot, n int) {
	old := s.held
	s.held = n
	if l.cfg.budget != 0 {
		l.holders.move(s, old, n, l.cfg.listClass)
	}
	l.charge(n - old)
}

// relieve closes, OverBudget, the loop's largest holders, from its
// highest size class down, while the buffered total is over nine tenths
// of the budget, until it has freed what the classes it reached hold:
// with used, the total as the caller took it, over the budget, its share
// of the excess at its pass, the whole of it from the data path, whose
// growth passed the budget. It spares keep, the connection whose
// OnTraffic runs it (which gnet must close itself), and reports whether
// keep is one it would have closed.
//
// It finds them in the loop's lists of holders: O(size classes +
// connections closed), so that it may run on the data path
// (BenchmarkRelief). Only when the excess is spread over connections
// each holding less than the lists keep (a 1024th of the budget, 64 KiB
// at most), more than a thousand of them, does the loop's pass go on
// over the descriptor table (TestBudgetThinHolders); the data path
// leaves that to the pass.
func (l *loop) relieve(used int64, keep *slot) (closeKeep bool) {
	l.saturated = false
	b := l.cfg.budget
	if used <= b {
		return false
	}
	over := used - b*9/10
	share := over
	if keep == nil {
		share = mulDiv(over, l.held.Load(), used)
	}
	top := numClasses // none
	for freed := int64(0); top > 1 && freed < share; {
		top--
		freed += l.holders.bytes[top]
	}
	relieved := func() bool { return l.h.buffered() <= b*9/10 || l.stopped.Load() }
	for class := numClasses - 1; class >= max(top, l.cfg.listClass); class-- {
		for s := l.holders.first[class]; s != nil; {
			switch {
			case relieved():
				return closeKeep
			case s == keep:
				closeKeep = true
				s = s.link().next
			default:
				l.reap(s, OverBudget)
				s = l.holders.first[class] // OnReap may have moved others
			}
		}
	}
	if top < l.cfg.listClass && keep == nil && !relieved() {
		l.h.table.each(l, func(s *slot) bool {
			if sizeClass(s.held) >= top {
				l.reap(s, OverBudget)
			}
			return !relieved()
		})
	}
	return closeKeep
}

// shed closes, OverBudget, the loop's holders past the limits the
// pressure leaves them, from the highest size class down. O(connections
// in the lists): it runs in the loop's pass, not on the data path. A
// connection in no list holds less than any shrunk input limit, and its
// output, if it is past its own shrunk limit, is seen at its next look,
// which comes each tick while output is pending.
func (l *loop) shed() {
	for class := numClasses - 1; class >= l.cfg.listClass; class-- {
		for s := l.holders.first[class]; s != nil && !l.stopped.Load(); {
			next := s.link().next
			if l.overBudget(s, s.held-s.pend, s.pend, true) {
				l.reap(s, OverBudget)
				if next != nil && (next.owner.Load() != l || sizeClass(next.held) != class) {
					next = l.holders.first[class] // OnReap moved it: the class again
				}
			}
			s = next
		}
	}
}

// mulDiv returns a*b/c, for 0 <= a and 0 < c, with b clamped to 0..c,
// without the overflow of a*b: a budget of tens of gigabytes takes it
// past 2^63 (TestBudgetHuge).
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(min(max(b, 0), c)))
	q, _ := bits.Div64(hi, lo, uint64(c)) // a*b/c <= a: hi < c
	return int64(q)
}

// holders are the bytes a loop's connections buffer, by size class, and
// the connections that buffer the most, in a list per class from
// config.listClass up, linked through their slots' holderLinks, so that
// the budget finds the largest holders without walking the descriptor
// table, as Envoy sorts streams into power-of-two buckets to reset the
// largest first; only finer, so that the largest go first to within an
// eighth. A connection that buffers less (a partial request, an answer
// the socket will soon take) only moves bytes between classes: the data
// path touches no other connection's memory for it (BenchmarkOnTraffic's
// buffering case). Only the loop's goroutine touches them.
type holders struct {
	first [numClasses]*slot
	bytes [numClasses]int64
}

// holderLink is a slot's place in its class's list of holders, held in
// its chunk (link); zero while the slot is in none.
type holderLink struct{ prev, next *slot }

// numClasses is the number of size classes: eight per power of two.
const numClasses = 8 * (bits.UintSize + 1)

// move moves s, which held old bytes and now holds n, to n's class, in
// its list if the class is listed (from class listed up). O(1).
func (h *holders) move(s *slot, old, n, listed int) {
	from, to := sizeClass(old), sizeClass(n)
	h.bytes[from] -= int64(old)
	h.bytes[to] += int64(n)
	if from == to || from < listed && to < listed {
		return
	}
	k := s.link()
	if from >= listed {
		if k.prev != nil {
			k.prev.link().next = k.next
		} else {
			h.first[from] = k.next
		}
		if k.next != nil {
			k.next.link().prev = k.prev
		}
		*k = holderLink{}
	}
	if to >= listed {
		k.next = h.first[to]
		if k.next != nil {
			k.next.link().prev = s
		}
		h.first[to] = s
	}
}

// sizeClass returns n's class: n itself below 8, else eight per power of
// two, from its length in bits and the three bits after its highest.
// Classes grow with n; only 0 is in class 0.
func sizeClass(n int) int {
	if n < 8 {
		return n
	}
	l := bits.Len(uint(n))
	return 8*l + int(uint(n)>>(l-4))&7
}

// overBudget reports whether s's connection, buffering in (counted only
// after a callback) and p, is past the limits the budget's pressure
// leaves it. It takes the pressure afresh before it says so, since a
// loop's squeeze goes stale as other loops close connections.
func (l *loop) overBudget(s *slot, in, p int, after bool) bool {
	for fresh := false; l.squeeze > 0; fresh = true {
		o := s.lim().output
		if p <= squeezed(o.Max, min(o.Max, 2*o.High), l.squeeze) && (!after || in <= l.maxIn) {
			return false
		}
		if fresh {
			return true
		}
		l.takePressure()
	}
	return false
}

// squeezed returns the limit max shrunk toward floor by the squeeze x,
// from 0, not at all, to 1, to the floor.
func squeezed(limit, floor int, x float64) int {
	return floor + int(float64(limit-floor)*(1-x))
}

// charge adds d to the bytes the loop's connections buffer, and takes
// the pressure afresh if the loop's sum has moved a step since it last
// did. Only the loop's goroutine calls it.
func (l *loop) charge(d int) {
	n := l.held.Load() + int64(d)
	l.held.Store(n)
	if n > l.recheckAbove || n < l.recheckBelow {
		if used := l.takePressure(); l.squeeze >= l.passSqueeze+1.0/64 || used > l.cfg.budget {
			// Every loop's pass closes what the pressure no longer
			// allows, and a loop whose own growth took the total over
			// the budget relieves it at once, from the data path: by
			// its runnable's turn one batch of reads (up to 64 KiB each
			// from a thousand connections) could have passed it.
			l.saturated = used > l.cfg.budget
			for _, o := range l.h.loops.all() {
				o.dispatch()
			}
		}
	}
}

// takePressure reads the buffered total over every loop, which it
// returns, and sets the loop's squeeze and shrunk input limit from it.
// When the squeeze has grown a step since the loop's last pass, or the
// total is over the budget, charge sends every loop its runnable, whose
// pass closes what the shrunk limits no longer allow. O(loops).
func (l *loop) takePressure() int64 {
	b := l.cfg.budget
	used := l.h.buffered()
	l.squeeze = min(max(2*float64(used)/float64(b)-1, 0), 1)
	l.maxIn = squeezed(l.cfg.maxInput, min(l.cfg.maxInput, budgetInputFloor), l.squeeze)
	n, step := l.held.Load(), b/256
	l.recheckBelow, l.recheckAbove = n-step, n+step
	return used
}

// buffered returns the bytes buffered for clients over every loop, each
// loop's sum as it last published it. Safe from any goroutine; O(loops).
func (h *Handler) buffered() int64 {
	var n int64
	for _, l := range h.loops.all() {
		n += l.held.Load()
	}
	return n
}

// UnderPressure reports whether the connections buffer more than half the
// budget, from which their limits shrink: a keep-alive server then
// answers with its connection's close (HTTP's "Connection: close" and
// CloseAfterFlush), as Envoy and nginx turn keep-alive off under load,
// so that clients that wait between requests give their memory back.
// False with the budget off. Safe from any goroutine; O(loops), no
// allocation.
func (h *Handler) UnderPressure() bool {
	return h.cfg.budget != 0 && 2*h.buffered() > h.cfg.budget
}

// DefaultBudget returns Options.Budget's default: a 1024th of the memory
// the process may use, the least of GOMEMLIMIT (when set), its cgroup's
// memory limit (cgroup v2's memory.max, or v1's memory.limit_in_bytes,
// the least along its cgroup's path) and the physical memory; a 1024th of
// 16 GiB where none can be read; and at least 192 KiB, what one
// connection may keep under pressure with the default limits (New raises
// it to that of the limits it is given). The budget counts the bytes
// buffered, and a process that holds them grows by a multiple of it: the
// buffers' capacity (gnet's grow by doubling), the freed ones in gnet's
// pools until the next collections, and Go's heap goal, twice what is
// live (GOGC=100). bench/results/httpload-budget*.txt measures that
// growth under thousands of attacking clients, for the example servers;
// one fraction for every source, so that a container, a GOMEMLIMIT and a
// machine of the same size get the same budget, and small enough that
// the growth measured there stays a small share of that memory. It reads
// a few files, once per call.
func DefaultBudget() int64 {
	limit := physicalMemory()
	if cg := cgroupMemoryLimit(); cg > 0 && (limit <= 0 || cg < limit) {
		limit = cg
	}
	if gm := debug.SetMemoryLimit(-1); gm < math.MaxInt64 && (limit <= 0 || gm < limit) {
		limit = gm
	}
	if limit <= 0 {
		limit = 16 << 30
	}
	return max(limit/1024, budgetFloor)
}

// budgetFloor is what one connection may keep under the budget's
// pressure with the default limits: min(DefaultMaxInput, 64 KiB) +
// min(DefaultOutput.Max, 2*DefaultOutput.High).
const budgetFloor = 192 << 10

// procRoot and cgroupRoot are where DefaultBudget reads what the machine
// and the cgroup allow; TestDefaultBudget points them at fixtures.
var procRoot, cgroupRoot = "/proc", "/sys/fs/cgroup"

// cgroupMemoryLimit returns the memory limit of the process's cgroup:
// the least of cgroup v2's memory.max, or v1's memory.limit_in_bytes,
// over its path and the path's ancestors, each of which limits it; 0 for
// none or where it cannot be read.
func cgroupMemoryLimit() int64 {
	b, err := os.ReadFile(path.Join(procRoot, "self/cgroup"))
	if err != nil {
		return 0
	}
	var least int64
	for line := range strings.Lines(string(b)) {
		// hierarchy-ID:controllers:path; v2's has no controllers.
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		root, file := cgroupRoot, "memory.max"
		if f[1] != "" {
			if !slices.Contains(strings.Split(f[1], ","), "memory") {
				continue
			}
			root, file = path.Join(cgroupRoot, "memory"), "memory.limit_in_bytes"
		}
		for dir := path.Clean("/" + f[2]); ; dir = path.Dir(dir) {
			// v2 writes "max" for none, v1 a number near 2^63.
			if n := readBytes(path.Join(root, dir, file)); n > 0 && n < 1<<60 && (least == 0 || n < least) {
				least = n
			}
			if dir == "/" {
				break
			}
		}
	}
	return least
}

// physicalMemory returns MemTotal from /proc/meminfo, or 0.
func physicalMemory() int64 {
	b, err := os.ReadFile(path.Join(procRoot, "meminfo"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// readBytes returns the number in the file name, or 0 if it holds none
// ("max", say) or cannot be read.
func readBytes(name string) int64 {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// drainShare returns the bytes a connection must drain over window not to
// drain fewer than rate bytes a second: their product, rounded up, as
// drained bytes are whole, and at most maxInt. It is computed exactly: a
// float64 product that fell just short of a whole number lost a byte,
// letting through a peer a byte short of the rate (TestOutputBoundsRandom's
// share).
func drainShare(rate int, window time.Duration) int {
	hi, lo := bits.Mul64(uint64(rate), uint64(window))
	if hi >= uint64(time.Second) {
		return maxInt // the quotient would not fit in 64 bits
	}
	q, r := bits.Div64(hi, lo, uint64(time.Second))
	if r != 0 {
		q++
	}
	return int(min(q, uint64(maxInt)))
}

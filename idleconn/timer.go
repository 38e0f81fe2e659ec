package idleconn

import (
	"fmt"
	"math"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// Timer calls a function on a gnet event loop after a delay, once or at a
// fixed rate: the EventLoop.Schedule that gnet leaves unsupported. Arm it
// with Handler.ConnTimer, tied to a connection, or Handler.LoopTimer, tied
// to a loop only. The callback runs on the loop, like a handler callback,
// so it may write to the connection and close it with no lock.
//
// The caller owns a Timer's storage, typically a field of its
// per-connection context, so arming, re-arming, stopping and firing
// allocate nothing (TestTimerZeroAllocs). A timer is due at the first
// tick (a quarter of Resolution) that begins at or after its time, and
// fires then or later, never earlier. A periodic timer's firings are for
// the times d, d+period, d+2·period... after it was armed, each due at its
// own tick, so that its rate does not drift whatever the tick; when its
// loop runs late, periods missed fire one per tick until it has caught up,
// and a period shorter than a tick fires once a tick (TestTimersRandom).
// A callback that stops or re-arms another timer due at the same tick is
// obeyed (TestTimerStoppedAtItsTick).
//
// A callback that panics is handled as gnet handles a handler that panics:
// gnet does not recover it, and the process exits.
//
// The zero value is a stopped timer. A Timer belongs to one loop while
// armed, and is only touched from that loop's goroutine: arming it from
// another goroutine is a data race the package cannot detect. A Timer must
// not be copied.
type Timer struct {
	holder packwheel.Holder
	l      *loop     // the loop it is armed on, nil if never armed
	c      gnet.Conn // the connection it is tied to, nil for none
	f      func(c gnet.Conn)
	// at is the time of the firing it is armed for, after the clock's
	// origin, and period the time between firings, 0 for a one-shot
	// timer. Each firing's tick is found from its time, not from the tick
	// before, so that rounding a period to ticks adds up to nothing
	// (TestTimersRandom).
	at, period time.Duration
}

// ConnTimer arms t to call f(c) on c's event loop after d, then every
// period if period is positive. It must be called on c's loop, and reports
// false, arming nothing, if c is not tracked (closed, refused or
// untracked). The timer is tied to c: it never fires once c has closed,
// even if c's descriptor is reused. Arming an armed timer re-arms it. It
// panics, with a message starting "idleconn: ", on a negative d or period,
// a nil f, or t armed on another loop, before changing anything. O(1), no
// allocation.
func (h *Handler) ConnTimer(c gnet.Conn, t *Timer, d, period time.Duration, f func(c gnet.Conn)) bool {
	h.checkTimer("ConnTimer", d, period, f)
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	h.armTimer(l, c, t, d, period, f)
	return true
}

// LoopTimer arms t to call f(nil) on event loop el after d, then every
// period if period is positive: a timer of the loop, for work such as a
// periodic flush, tied to no connection. It must be called on el, from a
// handler callback of one of its connections or a runnable given to
// el.Execute. It reports false, arming nothing, once the engine has
// begun to stop (OnShutdown): gnet may still open a connection it had
// accepted, and call the wrapped handler's OnOpen, after that. It panics
// as ConnTimer does, before changing anything. O(1); it allocates the
// loop's state if el has none yet, and otherwise nothing once warm (see
// Cost in the package documentation).
func (h *Handler) LoopTimer(el gnet.EventLoop, t *Timer, d, period time.Duration, f func(c gnet.Conn)) bool {
	h.checkTimer("LoopTimer", d, period, f)
	l := h.loops.findOrAdd(el, func() *loop { return newLoop(h, el) })
	if l == nil {
		return false
	}
	h.armTimer(l, nil, t, d, period, f)
	return true
}

// Stop stops t, reporting whether it was armed. It must be called on the
// loop t is armed on, or after its engine stopped. O(1), no allocation.
func (t *Timer) Stop() bool {
	if t.l == nil || t.l.stopped.Load() {
		return false
	}
	return t.l.tw.Cancel(&t.holder)
}

// checkTimer panics if the arguments of call are misuse.
func (h *Handler) checkTimer(call string, d, period time.Duration, f func(gnet.Conn)) {
	switch {
	case d < 0:
		panic(fmt.Sprintf("idleconn: %s: negative delay %v", call, d))
	case period < 0:
		panic(fmt.Sprintf("idleconn: %s: negative period %v (zero means once)", call, period))
	case f == nil:
		panic(fmt.Sprintf("idleconn: %s: nil function", call))
	}
}

// armTimer arms t on l, checked.
func (h *Handler) armTimer(l *loop, c gnet.Conn, t *Timer, d, period time.Duration, f func(gnet.Conn)) {
	if t.l != nil && t.l != l && !t.l.stopped.Load() && t.holder.Active() {
		panic("idleconn: Timer armed on another event loop; stop it there first")
	}
	if t.l != nil && t.l.stopped.Load() {
		t.holder = packwheel.Holder{} // its wheel went with its engine
	}
	t.l, t.c, t.f, t.period = l, c, f, period
	t.at = later(h.sinceOrigin(h.now()), d)
	due := l.tickOf(t.at)
	l.tw.Schedule(&t.holder, due, t)
	l.wantBy(due)
}

// tickOf returns the tick a Timer's firing for time at, after the clock's
// origin, is due at: the first that begins at or after it, as
// Clock.Deadline gives from a time.Time, whose arithmetic took a third of
// each firing (BenchmarkLoopTimers); MaxTick for the longest Duration, at
// which a time too far off to count stops.
func (l *loop) tickOf(at time.Duration) uint64 {
	if at == math.MaxInt64 {
		return packwheel.MaxTick
	}
	return ceilDiv(at, l.cfg.tick)
}

// later returns at+d for at and d at least 0, or the longest Duration if
// that is beyond it: a timer that far off never fires.
func later(at, d time.Duration) time.Duration {
	if d > math.MaxInt64-at {
		return math.MaxInt64
	}
	return at + d
}

// runTimers fires the loop's Timers due by tick now, reapBatch at a time,
// and comes back for the rest after gnet has served the I/O waiting. Each
// fires from inside the wheel's advance (fireTimer), so that a callback
// that stops or re-arms a timer due at the same tick is obeyed, as it
// would not be by one taken out of the wheel with it in a batch
// (TestTimersRandom).
func (l *loop) runTimers(now uint64) {
	if l.tw.Len() == 0 || l.stopped.Load() {
		return
	}
	l.firingAt = now
	if !l.tw.AdvanceLimit(now, reapBatch, l.fire) {
		l.dispatch()
	}
}

// fireTimer runs t, which expired on l at tick now: it drops a timer
// whose connection has closed, re-arms a periodic one, and calls the
// function. A connection's output is looked at before the function
// writes, to see what drained, and after, as on the data path.
func (l *loop) fireTimer(t *Timer, now uint64) {
	var s *slot
	if c := t.c; c != nil {
		if s = l.h.table.lookup(c.Fd()); s == nil || s.owner.Load() != l || s.conn() != c {
			return // its connection closed
		}
		if why := l.observe(s, c, c.OutboundBuffered(), now, false); why != 0 {
			l.reap(s, why)
			return
		}
		if s.owner.Load() != l || s.conn() != c {
			return // OnWritable closed it
		}
	}
	if t.period != 0 {
		// Not before the next tick, though the wheel's advance is at this
		// timer's own, which may be earlier: periods missed fire one a
		// tick, not all in the same run.
		t.at = later(t.at, t.period)
		l.tw.Schedule(&t.holder, max(l.tickOf(t.at), now+1), t)
	}
	t.f(t.c)
	if s != nil && s.owner.Load() == l && s.conn() == t.c {
		if why := l.observe(s, t.c, t.c.OutboundBuffered(), now, true); why != 0 {
			l.reap(s, why)
		}
	}
}

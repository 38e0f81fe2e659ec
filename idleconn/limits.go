package idleconn

import (
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// The per-connection limits below may be changed at any moment from a
// handler callback for c or a runnable on c's loop (given to
// c.EventLoop().Execute), and from nowhere else: like Touch they take no
// lock, and a call from another goroutine is a data race. Each reports
// whether c is tracked, and does nothing to a connection that is not (one
// untracked, refused, or closed and its descriptor reused). Each is O(1),
// reads the clock once and allocates nothing. A limit brought earlier
// re-arms the connection's one timer; one moved later leaves it, and the
// timer, firing early, is re-armed for the time left. Whatever limit is
// reached first closes the connection, within Resolution after it, and
// OnReap and Stats say which.

// SetIdleTimeout sets how long c may receive nothing before it is closed,
// counted from now (and from each data received after), in place of
// Options.Timeout; zero turns the idle limit off for c. A keep-alive HTTP
// server sets its long timeout between requests and turns it off while a
// request is in progress, which a deadline bounds instead. It panics, with
// a message starting "idleconn: ", if d is negative, before changing
// anything.
func (h *Handler) SetIdleTimeout(c gnet.Conn, d time.Duration) bool {
	ticks := h.limit("SetIdleTimeout", d)
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().idle = ticks
	if ticks != 0 {
		s.last = l.stampNow()
		h.rearm(s, l)
	}
	return true
}

// SetDeadline closes c at t, however much data it receives, unless it is
// moved or cleared first; the zero time clears it. A deadline already past
// closes c at the loop's next run. A server stops a slowloris client with
// it: set when a request's first byte arrives, cleared when the request is
// complete. While set it also keeps CloseIdle from closing c.
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

// SetWriteStallTimeout sets how long c may have outbound data pending with
// none of it drained before it is closed, in place of
// Options.WriteStallTimeout; zero turns the limit off for c. Pending data
// counts from when a look at c's outbound buffer (in OnTraffic, when c's
// timer fires, or in this call) first finds it, and any drain seen at such
// a look restarts the count: data written outside OnTraffic is seen at the
// next of those. While data is pending the connection's timer fires each
// tick (a quarter of Resolution) to look, so that the count restarts at
// the drain itself (TestWriteStall). It panics, with a message starting "idleconn: ", if d is
// negative, before changing anything.
func (h *Handler) SetWriteStallTimeout(c gnet.Conn, d time.Duration) bool {
	ticks := h.limit("SetWriteStallTimeout", d)
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.stall, s.pend = ticks, 0
	if ticks != 0 {
		l.watchOutput(s, h.clock.Tick(h.now()))
	}
	return true
}

// SetMaxLifetime sets how long c may stay open, counted from its open, in
// place of Options.MaxLifetime; zero turns the limit off for c. A lifetime
// already exceeded closes c at the loop's next run. It panics, with a
// message starting "idleconn: ", if d is negative, before changing
// anything.
func (h *Handler) SetMaxLifetime(c gnet.Conn, d time.Duration) bool {
	ticks := h.limit("SetMaxLifetime", d)
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().life = ticks
	h.rearm(s, l)
	return true
}

// limit returns the ticks of a per-connection limit of d, checking d.
func (h *Handler) limit(call string, d time.Duration) uint64 {
	if d < 0 {
		panic(fmt.Sprintf("idleconn: %s: negative duration %v (zero turns the limit off)", call, d))
	}
	return limitTicks(d, h.cfg.tick)
}

// rearm brings s's timer forward if a limit just changed made it due
// sooner.
func (h *Handler) rearm(s *slot, l *loop) {
	now := h.clock.Tick(h.now())
	due, _ := l.due(s, now)
	l.arm(s, due, now)
}

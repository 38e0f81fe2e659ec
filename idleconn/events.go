package idleconn

import (
	"time"

	"github.com/panjf2000/gnet/v2"
)

// gnet's events but OnTraffic, the data path (traffic.go).

// OnBoot readies the Handler for a new engine, starts its driver and
// calls the wrapped handler's OnBoot. It drops any state left from an
// engine that stopped (O(1)) and panics if h was not made by New.
func (h *Handler) OnBoot(eng gnet.Engine) gnet.Action {
	if h.user == nil {
		panic("idleconn: Handler used without New")
	}
	h.loops.reset(false)
	h.table.reset()
	h.open.Store(0)
	h.shutting.Store(false)
	h.closeAll.Store(false)
	if h.runDriver && h.drv == nil {
		h.drv = startDriver(h)
	}
	return h.user.OnBoot(eng)
}

// OnShutdown stops the driver, waiting for its goroutine to end, drops
// every wheel and all connection state, leaving them to the garbage
// collector (O(1)), then calls the wrapped handler's OnShutdown. gnet
// calls it before its loops close their remaining connections; those
// closes find nothing to untrack.
func (h *Handler) OnShutdown(eng gnet.Engine) {
	if h.drv != nil {
		h.drv.stop()
		h.drv = nil
	}
	h.loops.reset(true)
	h.table.reset()
	h.user.OnShutdown(eng)
}

// OnOpen starts tracking c, then calls the wrapped handler's OnOpen, which
// may already Untrack c or change its limits. With MaxConns reached, or
// once Shutdown has begun, it refuses c instead: it calls OnRefuse and
// returns gnet.Close, and the wrapped handler hears nothing of c. The
// first connection of a loop creates the loop's state; after that an open
// costs a clock read and an O(1) schedule, and allocates only when its
// descriptor is the first of a new block of 1024.
func (h *Handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if fd := c.Fd(); fd >= 0 {
		el := c.EventLoop()
		if l := h.loops.findOrAdd(el, func() *loop { return newLoop(h, el) }); l != nil {
			if !h.admit() {
				l.refusing = c
				if f := h.cfg.onRefuse; f != nil {
					f(c)
				}
				return nil, gnet.Close
			}
			l.track(c, h.table.get(fd), h.clock.Tick(h.now()))
		}
	}
	return h.user.OnOpen(c)
}

// OnClose stops tracking c, then calls the wrapped handler's OnClose. O(1),
// no allocation. A handler that wraps this one must pass OnClose on:
// otherwise the package cannot tell a reused descriptor from its old
// connection, and it panics, with a message starting "idleconn: ", when it
// sees one opened again or a connection it closed not reported closed.
func (h *Handler) OnClose(c gnet.Conn, err error) gnet.Action {
	if l := h.loops.find(c.EventLoop()); l != nil {
		if l.refusing == c {
			l.refusing = nil
			return gnet.None
		}
		h.open.Add(-1)
	}
	h.Untrack(c)
	return h.user.OnClose(c, err)
}

// OnTick calls the wrapped handler's OnTick and returns what it returns:
// the package needs no ticker, and gnet calls OnTick only for an engine
// run with gnet.WithTicker(true).
func (h *Handler) OnTick() (time.Duration, gnet.Action) {
	return h.user.OnTick()
}

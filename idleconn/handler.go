package idleconn

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// Handler is a gnet.EventHandler that passes every event to the handler it
// wraps, unchanged, and closes the connections that reach a limit: idle,
// deadline, write stall or lifetime. Make one with New; it needs no
// gnet.WithTicker: a driver goroutine it starts in OnBoot and stops in
// OnShutdown wakes the event loops when a timer is due, and sleeps
// otherwise.
//
// The wrapped handler's Context and SetContext calls, return values and
// actions are its own; Handler keeps its state elsewhere. Each event costs
// a lookup in a table indexed by file descriptor, with no lock and no
// allocation; see the package documentation.
//
// A Handler serves one TCP or Unix-socket engine at a time; it panics,
// with a message starting "idleconn: ", on the first datagram of a UDP
// engine, whose packets it cannot track. Its event methods are called by
// gnet; the per-connection calls (Touch, Untrack, SetIdleTimeout,
// SetDeadline, SetWriteStallTimeout, SetMaxLifetime) by the wrapped
// handler, on the connection's loop; Stats, CloseIdle and Resolution from
// anywhere. The zero value is not usable: OnBoot panics. A Handler must
// not be copied.
type Handler struct {
	user  gnet.EventHandler
	cfg   config
	clock packwheel.Clock
	now   func() time.Time // time.Now; tests drive a fake clock

	loops registry
	table fdTable

	// wakeup nudges the driver to look at the loops again; drv is the
	// driver of the engine running, nil if none. runDriver is false in
	// tests that drive the loops themselves.
	wakeup    chan struct{}
	drv       *driver
	runDriver bool

	open    atomic.Int64 // connections open, counted for MaxConns
	refused atomic.Uint64
	reaped  [reasons]atomic.Uint64 // by Reason-1
}

// New returns a Handler that wraps user with the reaper opts describes. It
// returns an error, starting "idleconn: " and naming the option at fault,
// if opts is invalid. It allocates only the Handler: each event loop's
// wheel is made when the loop opens its first connection.
func New(user gnet.EventHandler, opts Options) (*Handler, error) {
	h, err := newHandler(user, opts, time.Now)
	if h != nil {
		h.runDriver = true
	}
	return h, err
}

func newHandler(user gnet.EventHandler, opts Options, now func() time.Time) (*Handler, error) {
	if user == nil {
		return nil, errors.New("idleconn: the handler to wrap is nil")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Handler{
		user:   user,
		cfg:    cfg,
		clock:  packwheel.NewClock(now(), cfg.tick),
		now:    now,
		wakeup: make(chan struct{}, 1),
	}, nil
}

// Resolution returns how late a close may come: Options.Resolution, or the
// default derived from Options.Timeout. Safe from any goroutine; O(1).
func (h *Handler) Resolution() time.Duration { return h.cfg.resolution }

// OnBoot readies the reaper for a new engine, starts its driver and calls
// the wrapped handler's OnBoot. It drops any state left from an engine
// that stopped (O(1)) and panics if h was not made by New.
func (h *Handler) OnBoot(eng gnet.Engine) gnet.Action {
	if h.user == nil {
		panic("idleconn: Handler used without New")
	}
	h.loops.reset(false)
	h.table.reset()
	h.open.Store(0)
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
// may already Untrack c or change its limits. With MaxConns reached it
// refuses c instead: it calls OnRefuse and returns gnet.Close, and the
// wrapped handler hears nothing of c. The first connection of a loop
// creates the loop's state; after that an open costs a clock read and an
// O(1) schedule, and allocates only when its descriptor is the first of a
// new block of 1024.
func (h *Handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if fd := c.Fd(); fd >= 0 {
		el := c.EventLoop()
		if l := h.loops.findOrAdd(el, func() *loop { return newLoop(h, el) }); l != nil {
			if h.open.Add(1) > h.cfg.maxConns && h.cfg.maxConns > 0 {
				h.open.Add(-1)
				h.refused.Add(1)
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

// OnTraffic records that c received data, then calls the wrapped handler's
// OnTraffic. Recording reads one atomic pointer and stores one number, in
// the descriptor's slot: it allocates nothing, takes no lock and
// reschedules no timer. With a write stall timeout on, it also looks at
// c's outbound buffer before and after the wrapped handler runs: an
// interface call each, and a schedule when data begins pending.
//
// It skips the checks Touch makes: gnet calls OnTraffic on c's own loop,
// and only for the connection that holds c's descriptor.
func (h *Handler) OnTraffic(c gnet.Conn) gnet.Action {
	s := h.stamp(c)
	if s == nil || s.stall == 0 {
		return h.user.OnTraffic(c)
	}
	return h.watchTraffic(s, c)
}

// stamp is the data path: it records that c received data by storing its
// loop's epoch in its slot, and returns the slot, or nil if c is not
// tracked. The timer stays as it is; expire re-arms it for the time left
// when it fires.
func (h *Handler) stamp(c gnet.Conn) *slot {
	if s := h.table.lookup(c.Fd()); s != nil {
		if l := s.owner.Load(); l != nil {
			s.last = l.epoch
			if !l.busy.Load() {
				l.markBusy()
			}
			return s
		}
	}
	if _, udp := c.LocalAddr().(*net.UDPAddr); udp {
		// gnet calls no OnOpen for UDP: nothing could ever be closed.
		panic("idleconn: a UDP engine has no connections to close; " +
			"idleconn.Handler serves TCP and Unix-socket engines only")
	}
	return nil
}

// watchTraffic is OnTraffic for a connection whose write stall timeout is
// on: it looks at the outbound buffer before the wrapped handler writes to
// it, to see what drained, and after, to see what is pending.
func (h *Handler) watchTraffic(s *slot, c gnet.Conn) gnet.Action {
	l := s.owner.Load()
	now := l.ring[l.epoch&l.mask]
	if s.pend != 0 {
		l.watchOutput(s, now)
	}
	action := h.user.OnTraffic(c)
	if s.owner.Load() == l && s.c == c && s.stall != 0 {
		l.watchOutput(s, now)
	}
	return action
}

// OnClose stops tracking c, then calls the wrapped handler's OnClose. O(1),
// no allocation. A handler that wraps this one must pass OnClose on:
// otherwise the reaper cannot tell a reused descriptor from its old
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

// Touch records activity on c as OnTraffic does, for handlers that count
// something else as activity (data they write, say). It must be called on
// c's event loop: from a handler callback for c, or from a runnable given
// to c.EventLoop().Execute. It does nothing if c is not tracked. O(1), no
// allocation.
func (h *Handler) Touch(c gnet.Conn) {
	if s, l := h.tracking(c); s != nil {
		s.last = l.stampNow()
	}
}

// Untrack stops the reaper from closing c, reporting whether c was
// tracked; c stays untracked until it closes. Like Touch, it must be called
// on c's event loop. O(1), no allocation.
func (h *Handler) Untrack(c gnet.Conn) bool {
	if s, l := h.tracking(c); s != nil {
		l.release(s)
		return true
	}
	return false
}

// tracking returns c's slot and the loop that tracks c, or nil if c is not
// tracked: a stale c, closed and its descriptor reused, finds the slot of
// another connection, or of another loop.
func (h *Handler) tracking(c gnet.Conn) (*slot, *loop) {
	if s := h.table.lookup(c.Fd()); s != nil {
		if l := s.owner.Load(); l != nil && l.el == c.EventLoop() && s.c == c {
			return s, l
		}
	}
	return nil, nil
}

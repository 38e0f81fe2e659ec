package idleconn

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// Handler is a gnet.EventHandler that passes every event to the handler it
// wraps, unchanged, and closes the connections that reach a limit (the
// package documentation lists them). Make one with New; it needs no
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
// gnet; the per-connection calls (Touch, Untrack, the setters, Writable,
// CloseAfterFlush, ConnTimer) by the wrapped handler, on the connection's
// loop; Stats, CloseIdle, Shutdown, ShuttingDown and Resolution from
// anywhere. The zero value is not usable: OnBoot panics. A Handler must
// not be copied.
type Handler struct {
	user   gnet.EventHandler
	cfg    config
	clock  packwheel.Clock
	origin time.Time        // the clock's tick 0
	now    func() time.Time // time.Now; tests drive a fake clock
	// shutdownWrite shuts a socket's write side; tests record the calls.
	shutdownWrite func(fd int) error

	loops registry
	table fdTable

	// wakeup nudges the driver to look at the loops again; drv is the
	// driver of the engine running, nil if none. runDriver is false in
	// tests that drive the loops themselves.
	wakeup    chan struct{}
	drv       *driver
	runDriver bool

	open     atomic.Int64 // connections open, counted for MaxConns
	shutting atomic.Bool  // Shutdown has begun
	closeAll atomic.Bool  // Shutdown's context has ended
	refused  atomic.Uint64
	reaped   [numReasons]atomic.Uint64 // by Reason-1
}

// New returns a Handler that wraps user with the limits opts describes. It
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
	origin := now()
	return &Handler{
		user:   user,
		cfg:    cfg,
		clock:  packwheel.NewClock(origin, cfg.tick),
		origin: origin,
		now:    now,
		wakeup: make(chan struct{}, 1),

		shutdownWrite: shutdownWrite,
	}, nil
}

// Resolution returns how late a close may come: Options.Resolution, or the
// default derived from Options.Timeout. Safe from any goroutine; O(1).
func (h *Handler) Resolution() time.Duration { return h.cfg.resolution }

// sinceOrigin returns t as a duration after the clock's origin.
func (h *Handler) sinceOrigin(t time.Time) time.Duration { return t.Sub(h.origin) }

// Touch records activity on c as OnTraffic does, for handlers that count
// something else as activity (data they write, say). It must be called on
// c's event loop: from a handler callback for c, or from a runnable given
// to c.EventLoop().Execute. It does nothing if c is not tracked. O(1), no
// allocation.
func (h *Handler) Touch(c gnet.Conn) {
	if s, l := h.tracking(c); s != nil {
		s.last = l.stamp()
	}
}

// Untrack stops the package from closing c, reporting whether c was
// tracked; c stays untracked until it closes. Like Touch, it must be
// called on c's event loop. O(1), no allocation.
func (h *Handler) Untrack(c gnet.Conn) bool {
	if s, l := h.tracking(c); s != nil {
		l.release(s)
		return true
	}
	return false
}

// setting is the start of every setter of a duration limit: it checks d,
// for call, which it names in the panic if d is negative, before anything
// changes, and returns the limit in ticks and c's slot and loop, nil if c
// is not tracked.
func (h *Handler) setting(call string, c gnet.Conn, d time.Duration) (uint64, *slot, *loop) {
	if d < 0 {
		panic(fmt.Sprintf("idleconn: %s: negative duration %v (zero turns the limit off)", call, d))
	}
	s, l := h.tracking(c)
	return limitTicks(d, h.cfg.tick), s, l
}

// tracking returns c's slot and the loop that tracks c, or nil if c is not
// tracked: a stale c, closed and its descriptor reused, finds the slot of
// another connection, or of another loop.
func (h *Handler) tracking(c gnet.Conn) (*slot, *loop) {
	if s := h.table.lookup(c.Fd()); s != nil {
		if l := s.owner.Load(); l != nil && l.el == c.EventLoop() && s.conn() == c {
			return s, l
		}
	}
	return nil, nil
}

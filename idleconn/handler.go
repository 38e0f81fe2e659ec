package idleconn

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// A connection's life, as the Handler sees it, top to bottom: gnet's
// events (OnOpen tracks a connection, OnTraffic is the data path, OnClose
// releases it), the per-connection calls, and the tables that find a
// connection's state from its descriptor and a loop's from its event
// loop.

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
// loop; Stats, CloseIdle, Shutdown, ShuttingDown, UnderPressure and
// Resolution from anywhere. The zero value is not usable: OnBoot panics. A Handler must
// not be copied.
type Handler struct {
	user   gnet.EventHandler
	cfg    config
	clock  packwheel.Clock
	origin time.Time        // the clock's tick 0
	now    func() time.Time // time.Now; tests drive a fake clock
	// shutdownWrite shuts a socket's write side, boundUnsent bounds what
	// the kernel holds unsent for one, unreadQueue says how much output
	// its send queue holds that the peer has not acknowledged, and abortOnClose
	// makes its close a reset; tests record the calls.
	shutdownWrite func(fd int) error
	boundUnsent   func(fd, n int)
	unreadQueue   func(fd int) (acked, queued uint64)
	abortOnClose  func(fd int)

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
// if opts is invalid. It allocates only the Handler and its wake-up
// channel: each event loop's wheel is made when the loop opens its first
// connection. It reads the descriptor limit, and for a zero Budget the
// memory limits (DefaultBudget).
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
		boundUnsent:   boundUnsent,
		unreadQueue:   unreadQueue,
		abortOnClose:  abortOnClose,
	}, nil
}

// Resolution returns how late a close may come: Options.Resolution, or the
// default derived from Options.Timeout. Safe from any goroutine; O(1).
func (h *Handler) Resolution() time.Duration { return h.cfg.resolution }

// sinceOrigin returns t as a duration after the clock's origin.
func (h *Handler) sinceOrigin(t time.Time) time.Duration { return t.Sub(h.origin) }

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
	for _, k := range kinds {
		if k.boot != nil {
			k.boot(h, eng)
		}
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
// may already Untrack c or change its limits. With MaxConns reached, the
// memory budget at its whole, or once Shutdown has begun, it refuses c
// instead: it calls OnRefuse and returns gnet.Close, and the wrapped
// handler hears nothing of c. The first connection of a loop creates the
// loop's state; after that an open costs a clock read and an O(1)
// schedule, and a nudge of the driver when it takes Overload's scale down
// a step, and allocates only when its descriptor is the first of a new
// block of 1024 or the loop's wheel is not yet warm (see Cost in the
// package documentation).
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

// admit counts c's open, and reports whether the server may hold it: no
// kind refuses it (MaxConns reached, the budget at its whole, Shutdown
// begun).
func (h *Handler) admit() bool {
	open := h.open.Add(1)
	for _, k := range kinds {
		if k.refuse != nil && k.refuse(h) {
			h.open.Add(-1)
			h.refused.Add(1)
			return false
		}
	}
	if o := &h.cfg.overload; o.step(open) > o.step(open-1) {
		h.nudge() // the scale fell a step: the loops' passes are due (wake)
	}
	return true
}

// track starts tracking c, opened at tick now, in its descriptor's slot s.
func (l *loop) track(c gnet.Conn, s *slot, now uint64) {
	if s.owner.Load() != nil {
		// gnet calls OnClose before it closes a descriptor, so a tracked
		// one is reused only if a handler wrapping this one kept OnClose
		// from it. The slot's timer may sit in another loop's wheel, which
		// only that loop may touch, and every later close would leak the
		// same way: stop here, before anything changes.
		panic(fmt.Sprintf("idleconn: descriptor %d opened again while still tracked: "+
			"a handler wrapping idleconn.Handler must pass OnClose on", c.Fd()))
	}
	// The open came before the end of tick now: idle since then.
	s.last, s.pend, s.flags = settledAt(now), 0, 0
	*s.lim() = limits{c: c}
	for _, k := range kinds {
		if k.open != nil {
			k.open(l, s, now)
		}
	}
	due, _ := l.dueOf(s, now)
	l.arm(s, due, now)
	s.owner.Store(l)
	l.tracked.Add(1)
}

// The data path: what OnTraffic adds to the wrapped handler's, top to
// bottom. BenchmarkOnTraffic measures it; TestZeroAllocs asserts it
// allocates nothing.

// OnTraffic records that c received data, then calls the wrapped handler's
// OnTraffic, then checks c's input and output against their bounds. The
// record is one number stored in the descriptor's line of the table: no
// lock, no allocation, no timer moved. The checks read c's inbound and
// outbound buffer sizes; only output pending takes it further (buffers.go).
// A connection closing after flush has its input discarded and the
// wrapped handler is not called. A bound exceeded closes c: OnTraffic
// tells OnReap and returns gnet.Close.
//
// When c's growth takes what all connections buffer past the memory
// budget, OnTraffic also closes the largest holders of c's loop, reason
// OverBudget, before it returns: their OnReap and the wrapped handler's
// OnClose run inside c's OnTraffic. That costs the budget's size classes
// and the closes, never a walk of every connection (BenchmarkRelief).
//
// It skips the checks Touch makes: gnet calls OnTraffic on c's own loop,
// and only for the connection that holds c's descriptor.
func (h *Handler) OnTraffic(c gnet.Conn) gnet.Action {
	s := h.table.lookup(c.Fd())
	var l *loop
	if s != nil {
		l = s.owner.Load()
	}
	if l == nil {
		if _, udp := c.LocalAddr().(*net.UDPAddr); udp {
			// gnet calls no OnOpen for UDP: nothing could ever be closed.
			panic("idleconn: a UDP engine has no connections to close; " +
				"idleconn.Handler serves TCP and Unix-socket engines only")
		}
		return h.user.OnTraffic(c)
	}

	// Received data: the idle timeout counts from now. The timer stays as
	// it is; when it fires, expire re-arms it for the time left.
	s.last.epoch = l.epoch
	if !l.busy.Load() {
		l.markBusy()
	}
	// Output was pending: see what drained before the handler writes.
	if s.pend != 0 && s.flags&closing == 0 {
		if why := l.observe(s, c, c.OutboundBuffered(), l.lastTick(), false); why != 0 {
			l.reaping(s, why)
			return gnet.Close
		}
		if s.owner.Load() != l {
			return h.user.OnTraffic(c) // untracked by OnWritable
		}
	}
	// Closing after flush, maybe from the OnWritable the look just
	// called (TestOnWritableClosesAfterFlush): the wrapped handler hears
	// no more.
	if s.flags&closing != 0 {
		_, _ = c.Discard(-1) // lingering: the peer's late bytes go
		if s.held != s.pend {
			l.hold(s, s.pend) // and the budget no longer counts them
		}
		return gnet.None
	}

	action := h.user.OnTraffic(c)
	if action != gnet.None || s.owner.Load() != l {
		return action // closing anyway, or untracked by the handler
	}

	// What the handler left unconsumed, and what it wrote that the peer
	// has not read.
	if p := c.OutboundBuffered(); p|c.InboundBuffered()|s.held != 0 {
		why := l.observe(s, c, p, l.lastTick(), true)
		if why == 0 && l.saturated && s.owner.Load() == l && l.relieve(l.h.buffered(), s) {
			why = OverBudget // among the largest holders of a budget just passed
		}
		if why != 0 {
			l.reaping(s, why)
			return gnet.Close
		}
	}
	return action
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

// release stops tracking the connection in s, which this loop owns.
func (l *loop) release(s *slot) {
	l.hold(s, 0)
	l.wheel.Cancel(&s.timer)
	s.lim().c = nil
	s.flags = 0 // its poll, if any, is dropped at the next run
	s.owner.Store(nil)
	l.tracked.Add(-1)
	l.timers.Store(int64(l.wheel.Len()))
}

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

// Stats returns a snapshot of the Handler's state. Safe from any
// goroutine; O(loops), no allocation. After the engine stops it reports
// no loops, no connections and no timers.
func (h *Handler) Stats() Stats {
	var s Stats
	for i := range s.reaped {
		s.reaped[i] = h.reaped[i].Load()
	}
	for _, l := range h.loops.all() {
		s.Loops++
		s.Tracked += int(l.tracked.Load())
		s.Timers += int(l.timers.Load())
	}
	for _, k := range kinds {
		if k.stats != nil {
			s = k.stats(h, s)
		}
	}
	return s
}

// chunkBits sets how many slots a chunk holds: 1024, in 208 KiB, which the
// Go allocator places on its own pages, so every slot is line-aligned.
const chunkBits = 10

// chunk holds the slots of 1024 descriptors, then their limits, then
// their links among their loop's holders (buffers.go): the data path
// walks an array of one line per descriptor.
type chunk struct {
	slots [1 << chunkBits]slot
	lims  [1 << chunkBits]limits
	links [1 << chunkBits]holderLink
}

// newChunk returns a chunk whose slots know their index.
func newChunk() *chunk {
	ch := new(chunk)
	for i := range ch.slots {
		ch.slots[i].index = uint32(i)
	}
	return ch
}

// limsOffset is the distance from the first slot to the first limits, and
// limsStride how much further each next limits lies than its slot;
// linksOffset is the distance to the first holderLink, and linksShrink
// how much nearer each next one lies than its slot.
const (
	limsOffset  = unsafe.Offsetof(chunk{}.lims)
	limsStride  = unsafe.Sizeof(limits{}) - unsafe.Sizeof(slot{})
	linksOffset = unsafe.Offsetof(chunk{}.links)
	linksShrink = unsafe.Sizeof(slot{}) - unsafe.Sizeof(holderLink{})
)

// lim returns the limits of the descriptor of s, which lies in a chunk.
// O(1): they lie in the same chunk, at a distance set by s's index.
func (s *slot) lim() *limits {
	return (*limits)(unsafe.Add(unsafe.Pointer(s), limsOffset+uintptr(s.index)*limsStride))
}

// link returns the place of the descriptor of s, which lies in a chunk,
// among its loop's holders. O(1), as lim.
func (s *slot) link() *holderLink {
	return (*holderLink)(unsafe.Add(unsafe.Pointer(s), linksOffset-uintptr(s.index)*linksShrink))
}

// conn returns the connection tracked in s.
func (s *slot) conn() gnet.Conn { return s.lim().c }

// fdTable maps descriptors to slots. Lookups load one atomic pointer and
// index two arrays; chunks, once made, never move (timers point into
// them), and adding one copies only the small directory, under a mutex.
//
// The zero value is an empty table ready to use.
type fdTable struct {
	dir atomic.Pointer[[]*chunk]
	mu  sync.Mutex
}

// lookup returns fd's slot, or nil if no connection with that descriptor
// was ever tracked. Safe from any goroutine; it allocates nothing.
func (t *fdTable) lookup(fd int) *slot {
	if d := t.dir.Load(); d != nil {
		if i := uint(fd) >> chunkBits; i < uint(len(*d)) {
			if ch := (*d)[i]; ch != nil {
				return &ch.slots[fd&(1<<chunkBits-1)]
			}
		}
	}
	return nil
}

// get returns fd's slot, making its chunk if needed; fd must not be
// negative. It allocates only when it makes a chunk.
func (t *fdTable) get(fd int) *slot {
	if s := t.lookup(fd); s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var d []*chunk
	if p := t.dir.Load(); p != nil {
		d = *p
	}
	i := fd >> chunkBits
	if i >= len(d) || d[i] == nil {
		grown := make([]*chunk, max(len(d), i+1))
		copy(grown, d)
		grown[i] = newChunk()
		t.dir.Store(&grown)
		d = grown
	}
	return &d[i].slots[fd&(1<<chunkBits-1)]
}

// reset drops every chunk. Slots still scheduled in a wheel stay valid
// memory, but no lookup finds them again.
func (t *fdTable) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dir.Store(nil)
}

// each calls f with every slot l owns, in descriptor order, until f
// returns false. O(descriptors ever tracked by the Handler): for the rare
// passes over every connection (CloseIdle, Shutdown, Overload), not for
// the data path. It must run on l's goroutine.
func (t *fdTable) each(l *loop, f func(s *slot) bool) {
	if d := t.dir.Load(); d != nil {
		for _, ch := range *d {
			if ch == nil {
				continue
			}
			for i := range ch.slots {
				if s := &ch.slots[i]; s.owner.Load() == l && !f(s) {
					return
				}
			}
		}
	}
}

// registry maps gnet's event loops to their loop state. Lookups, made on
// each open, read an immutable snapshot through one atomic load and scan
// it: a server has a handful of loops, and comparing a few interface values
// is cheaper than hashing one. Changes, made once per loop per engine run,
// copy the snapshot under a mutex.
//
// The zero value is an empty registry that accepts new loops.
type registry struct {
	list atomic.Pointer[[]*loop]

	mu sync.Mutex
	// stopped is set from OnShutdown to OnBoot: loops that show up then
	// (connections accepted while the engine winds down) get no state.
	stopped bool
}

// find returns the state of el, or nil if it has none. Safe from any
// goroutine; it allocates nothing.
func (r *registry) find(el gnet.EventLoop) *loop {
	if p := r.list.Load(); p != nil {
		for _, l := range *p {
			if l.el == el {
				return l
			}
		}
	}
	return nil
}

// findOrAdd returns the state of el, adding one made by mk if there is none
// and the engine is running. It returns nil while the engine is stopped.
func (r *registry) findOrAdd(el gnet.EventLoop, mk func() *loop) *loop {
	if l := r.find(el); l != nil {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	var list []*loop
	if p := r.list.Load(); p != nil {
		list = *p
	}
	l := mk()
	list = append(list[:len(list):len(list)], l)
	r.list.Store(&list)
	return l
}

// all returns the current loops. The slice must not be modified.
func (r *registry) all() []*loop {
	if p := r.list.Load(); p != nil {
		return *p
	}
	return nil
}

// reset drops every loop, and with it every wheel and connection state,
// after telling each loop it has stopped; stopped says whether new loops
// may be added afterwards.
func (r *registry) reset(stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.all() {
		l.stopped.Store(true)
	}
	r.stopped = stopped
	r.list.Store(nil)
}

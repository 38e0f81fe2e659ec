package idleconn

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The reaper, read from the driver's wake to the close: the driver
// goroutine sleeps until a loop has a timer due, then sends the loop its
// runnable (loop.Run), which refreshes the loop's clock, runs the kinds'
// passes, advances the loop's wheel and closes the connections whose
// limit came (expire, reap).

// driver is the goroutine that wakes the event loops: it sends a loop its
// runnable when the loop's wheel has a timer due, or when the loop needs a
// refresh to end an epoch that stamped events. In between it sleeps, until
// the earliest tick any loop published or until a loop nudges it with an
// earlier one, so a server with no timer due soon costs no wake-ups.
// gnet's ticker plays no part: a Handler reaps with or without
// gnet.WithTicker.
type driver struct {
	quit chan struct{}
	done chan struct{}
}

// startDriver starts h's driver for the engine that is booting.
func startDriver(h *Handler) *driver {
	d := &driver{quit: make(chan struct{}), done: make(chan struct{})}
	go d.run(h)
	return d
}

// stop ends the driver's goroutine and waits until it has returned.
func (d *driver) stop() {
	close(d.quit)
	<-d.done
}

func (d *driver) run(h *Handler) {
	defer close(d.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := h.now()
		var fire <-chan time.Time
		next, poll := h.wake(now)
		if next != packwheel.MaxTick || poll != noPoll {
			timer.Reset(min(h.clock.Until(now, next), time.Duration(poll)-h.sinceOrigin(now)))
			fire = timer.C
		}
		select {
		case <-d.quit:
			return
		case <-h.wakeup:
		case <-fire:
		}
	}
}

// wake sends its runnable to every loop that has work at time t, and
// returns the tick at which the driver must look again, packwheel.MaxTick
// if only a nudge can bring work, and when the earliest poll is due, in
// nanoseconds after the clock's origin, or noPoll. Safe from any
// goroutine (the driver, or a test); O(loops), and one EventLoop.Execute
// per loop sent.
func (h *Handler) wake(t time.Time) (next uint64, poll int64) {
	now, since := h.clock.Tick(t), int64(h.sinceOrigin(t))
	next, poll = packwheel.MaxTick, noPoll
	step := h.cfg.overload.step(h.open.Load())
	for _, l := range h.loops.all() {
		if at := l.pollAt.Load(); at <= since {
			l.dispatch()
		} else {
			poll = min(poll, at)
		}
		if step > l.scanStep.Load()+1 {
			l.dispatch() // Overload's pass (overloadKind)
		}
		switch {
		case l.busy.Load():
			// Events stamped with the current epoch need a refresh at
			// a later tick than the latest.
			if now > l.refreshed.Load() {
				l.dispatch()
			}
			next = min(next, now+1)
		case l.next.Load() <= now:
			l.dispatch()
			next = min(next, now+1)
		default:
			next = min(next, l.next.Load())
		}
	}
	return next, poll
}

// nudge tells the driver that a loop has work sooner than it last said.
// It never blocks and allocates nothing; nudges that come while one is
// pending merge.
func (h *Handler) nudge() {
	select {
	case h.wakeup <- struct{}{}:
	default:
	}
}

// loop is the package's state for one gnet event loop. Everything but el,
// which never changes, and the atomics belongs to that loop's goroutine:
// handler callbacks and the runnable (Run), which gnet runs there.
type loop struct {
	el  gnet.EventLoop
	h   *Handler
	cfg *config

	// epoch counts the refreshes that saw the clock at a new tick; ring
	// holds the tick of each recent epoch, at index epoch&mask (see
	// stamp). busy is set once an event has been stamped with the current
	// epoch, which needs a refresh at a later tick to end it; the refresh
	// clears it. The data path reads both, so they sit together.
	epoch uint64
	busy  atomic.Bool
	ring  []uint64
	mask  uint64

	wheel packwheel.Timers[*slot]
	batch []*slot
	// tw holds the loop's Timers, armed by the application for any time
	// ahead, so a hierarchical wheel, whose buckets cover any deadline.
	tw packwheel.Wheel[*Timer]
	// fire is tw's expiry callback, made once so that firing timers
	// never allocates, and firingAt the tick it fires at (runTimers).
	fire     func(*Timer)
	firingAt uint64
	// polls are the connections whose output is looked at more often than
	// once a tick (buffers.go).
	polls []poll

	// refusing is the connection OnOpen is refusing, from its OnOpen to
	// its OnClose, which gnet calls at once.
	refusing gnet.Conn
	loopLimits

	// next is the earliest tick at which the wheel has work, as the loop
	// last published it, packwheel.MaxTick for none; refreshed is the tick
	// of the latest refresh; pollAt is when the earliest poll is due, in
	// nanoseconds after the clock's origin, or noPoll. The driver reads
	// them.
	next      atomic.Uint64
	refreshed atomic.Uint64
	pollAt    atomic.Int64
	// pending is set while the runnable is queued on the loop, so that a
	// loop that falls behind gets one run, not one per tick.
	pending atomic.Bool
	// stopped is set when the engine shuts down. gnet calls OnShutdown on
	// its own goroutine while the loops still run, so a run of the
	// runnable may overlap it: after stopped, OnClose may find the
	// descriptor table already dropped.
	stopped atomic.Bool
	tracked atomic.Int64 // connections tracked
	timers  atomic.Int64 // the wheel's Len as of the loop's latest change
}

func newLoop(h *Handler, el gnet.EventLoop) *loop {
	l := &loop{
		el:    el,
		h:     h,
		cfg:   &h.cfg,
		ring:  make([]uint64, h.cfg.ringSize),
		mask:  uint64(h.cfg.ringSize - 1),
		batch: make([]*slot, 0, reapBatch),
	}
	l.fire = func(t *Timer) { l.fireTimer(t, l.firingAt) }
	l.startLimits()
	if h.cfg.wheel == Hierarchical {
		l.wheel = new(packwheel.Wheel[*slot])
	} else {
		l.wheel = packwheel.NewHashed[*slot](packwheel.HashedOptions{Slots: h.cfg.slots})
	}
	l.next.Store(packwheel.MaxTick)
	l.pollAt.Store(noPoll)
	return l
}

// lastTick returns the tick of the loop's latest refresh: now, or a
// little before, seen from the data path, which reads no clock.
func (l *loop) lastTick() uint64 { return l.ring[l.epoch&l.mask] }

// The reaper: the runnable the driver sends a loop when it has work, which
// advances the loop's wheel and closes the connections whose limit came.
// A connection has one timer, armed for the earliest of its timed limits
// (timedKinds); the reason is decided when it fires. A timer that fires
// before its connection is due, because data came or a limit moved later
// since it was armed, is re-armed for the time left, so that neither the
// data path nor a setter moving a limit later touches the wheel.

// reapBatch is how many expired timers a loop's runnable takes from the
// wheel at a time, and about how many connections one run closes before it
// lets the loop serve I/O again: closing one costs a few system calls, and
// a burst of thousands expiring together must not stall the loop. Timers
// that are only re-armed cost far less, and do not count.
const reapBatch = 256

// Run is the runnable the driver sends to the loop: it refreshes the
// loop's clock, runs the kinds' passes (what CloseIdle and Shutdown asked
// for, Overload's), looks at the output it polls, advances the wheel and
// deals with what expired, and fires the loop's Timers. It always returns
// nil, since gnet stops a loop whose task returns its shutdown error.
func (l *loop) Run(context.Context) error {
	l.pending.Store(false)
	if l.stopped.Load() {
		return nil
	}
	t := l.h.now()
	now := l.h.clock.Tick(t)
	if now > l.lastTick() {
		l.epoch++
		l.ring[l.epoch&l.mask] = now
		l.refreshed.Store(now)
		l.busy.Store(false)
	}
	again := uint64(packwheel.MaxTick)
	for _, k := range kinds {
		if k.pass != nil {
			again = min(again, k.pass(l, now))
		}
	}
	l.runPolls(l.h.sinceOrigin(t), now)
	for reaped := 0; ; {
		batch, done := l.wheel.AppendExpired(l.batch[:0], now, reapBatch)
		for _, s := range batch {
			if l.expire(s, now) {
				reaped++
			}
		}
		clear(batch)
		l.batch = batch[:0]
		if done || l.stopped.Load() {
			break
		}
		if reaped >= reapBatch {
			// Come back for the rest after gnet has served the I/O that
			// is waiting.
			l.dispatch()
			break
		}
	}
	l.runTimers(now)
	l.timers.Store(int64(l.wheel.Len()))
	l.next.Store(min(l.wheel.NextExpiry(packwheel.MaxTick), l.tw.NextExpiry(packwheel.MaxTick)))
	l.wantBy(again) // a pass that must come back
	return nil
}

// dispatch queues the runnable on the loop unless it is already queued.
// Safe from any goroutine.
func (l *loop) dispatch() {
	if l.pending.CompareAndSwap(false, true) {
		if err := l.el.Execute(context.Background(), l); err != nil {
			// The engine is shutting down; its loops close everything.
			l.pending.Store(false)
		}
	}
}

// expire handles s, whose timer fired at tick now: it closes the
// connection if a limit is reached, or re-arms the timer for the time the
// earliest one has left. It reports whether it closed the connection.
func (l *loop) expire(s *slot, now uint64) bool {
	if s.owner.Load() != l || s.timer.Active() || l.stopped.Load() {
		// Released by a callback run for an earlier slot of the same
		// batch (and maybe taken by another loop since), or re-armed; or
		// the engine is stopping, and will close everything itself.
		return false
	}
	m := s.lim()
	l.settle(&s.last)
	l.settle(&m.stall.since)
	l.settle(&m.drain.start)
	if s.pend != 0 || s.flags&closing != 0 {
		c := m.c
		if why := l.observe(s, c, c.OutboundBuffered(), now, false); why != 0 {
			l.reap(s, why)
			return true
		}
		if s.owner.Load() != l || m.c != c {
			return false // OnWritable closed or untracked it
		}
	}
	// With output pending, look has armed the timer for the next tick:
	// a drain must be seen when it comes, for the stall to count from it.
	due, why := l.dueOf(s, now)
	if due <= now {
		due, why = l.lastLook(s, due, why, now)
	}
	if due > now {
		l.arm(s, due, now)
		return false
	}
	l.reap(s, why)
	return true
}

// lastLook is what a pass that closes s does once dueOf has found limit
// why reached, due at or before tick now: the limit has its last look
// first (kind.reprieve), as an Idle close looks at the kernel's send queue
// (idleLook), which may put the close off; it returns dueOf's answer
// after the look, or its own arguments. Called only for a limit reached,
// so that a timer that fires early, and re-arms, pays no call for it
// (BenchmarkReaperTick).
func (l *loop) lastLook(s *slot, due uint64, why Reason, now uint64) (uint64, Reason) {
	if r := kinds[why-1].reprieve; r != nil && r(l, s, now) {
		return l.dueOf(s, now)
	}
	return due, why
}

// dueOf returns the tick at which the earliest of s's timed limits closes
// it, and which limit that is, as the loop stands at tick now;
// packwheel.MaxTick and 0 if every limit is off.
func (l *loop) dueOf(s *slot, now uint64) (uint64, Reason) {
	due, why := packwheel.MaxTick, Reason(0)
	for _, k := range timedKinds {
		if d := k.due(l, s, now); d < due {
			due, why = d, k.why
		}
	}
	return due, why
}

// arm makes s's timer fire by due (as the loop stands at tick now, or
// later), unless it already does: a timer that fires before its
// connection is due is re-armed for the time left, so limits that move
// later need no work. No timer is set further than the horizon ahead, so
// that it fires while the ring still remembers the refreshes its stamps
// need (see stamp), and a hashed wheel's revolution spans it. O(1).
func (l *loop) arm(s *slot, due, now uint64) {
	if due == packwheel.MaxTick {
		return // no limit: nothing to wait for
	}
	due = min(due, now+1+l.cfg.idleTicks)
	if s.timer.Active() && s.timer.Deadline() <= due {
		return
	}
	l.wheel.Schedule(&s.timer, due, s)
	l.timers.Store(int64(l.wheel.Len()))
	l.wantBy(due)
}

// rearm brings s's timer forward if a limit just changed made it due
// sooner. It reads the clock: the setters that call it run outside the
// data path.
func (h *Handler) rearm(s *slot, l *loop) {
	now := h.clock.Tick(h.now())
	due, _ := l.dueOf(s, now)
	l.arm(s, due, now)
}

// wantBy makes sure the driver runs the loop by tick due: it publishes due
// as the loop's next and wakes the driver, if it is earlier than the next
// the loop published.
func (l *loop) wantBy(due uint64) {
	if due < l.next.Load() {
		l.next.Store(due)
		l.h.nudge()
	}
}

// reap closes the connection in s for why, which OnReap and Stats hear
// of. It runs in the loop's runnable, or in another connection's
// OnTraffic (relieve), never inside a callback of gnet's for the
// connection itself, where the data path returns gnet.Close instead.
func (l *loop) reap(s *slot, why Reason) {
	c := s.conn()
	l.reaping(s, why)
	_ = l.el.Close(c)
	if s.owner.Load() == l && s.conn() == c && !l.stopped.Load() {
		// OnShutdown sets stopped before it drops the table, so an
		// OnClose that found no slot for c saw stopped set.
		panic(fmt.Sprintf("idleconn: descriptor %d closed without OnClose: "+
			"a handler wrapping idleconn.Handler must pass OnClose on", c.Fd()))
	}
}

// reaping counts a close for why, has it reset the connection if why says
// so (Reason), and tells OnReap, before the close: for reap, and for the
// data path, which returns gnet.Close instead.
func (l *loop) reaping(s *slot, why Reason) {
	l.h.reaped[why-1].Add(1)
	if abort := kinds[why-1].abort; abort != nil && abort(s.conn()) {
		l.h.abortOnClose(s.conn().Fd())
	}
	if f := l.cfg.onReap; f != nil {
		f(s.conn(), why)
	}
}

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

// reapBatch is how many expired timers a loop's runnable takes from the
// wheel at a time, and about how many connections one run closes before it
// lets the loop serve I/O again: closing one costs a few system calls, and
// a burst of thousands expiring together must not stall the loop. Timers
// that are only re-armed cost far less, and do not count.
const reapBatch = 256

// stampSettled is the value of a stamp (slot.last, slot.since) that has
// been settled into a tick, held next to it (slot.lastAt, slot.sinceAt).
const stampSettled = math.MaxUint64

// loop is the reaper's state for one gnet event loop. Everything but el,
// which never changes, and the atomics belongs to that loop's goroutine:
// handler callbacks and the runnable, which gnet runs there.
type loop struct {
	el  gnet.EventLoop
	h   *Handler
	cfg *config

	// epoch counts the refreshes that saw the clock at a new tick; ring
	// holds the tick of each recent epoch, at index epoch&mask. busy is
	// set once an event has been stamped with the current epoch, which
	// needs a refresh at a later tick to end it; the refresh clears it.
	// The data path reads both, so they sit together.
	epoch uint64
	busy  atomic.Bool
	ring  []uint64
	mask  uint64

	wheel packwheel.Timers[*slot]
	batch []*slot
	// tw holds the loop's Timers, armed by the application for any time
	// ahead, so a hierarchical wheel, whose buckets cover any deadline.
	tw      packwheel.Wheel[*Timer]
	twBatch []*Timer

	// refusing is the connection OnOpen is refusing for MaxConns, from its
	// OnOpen to its OnClose, which gnet calls at once.
	refusing gnet.Conn

	// next is the earliest tick at which the wheel has work, as the loop
	// last published it, packwheel.MaxTick for none; refreshed is the tick
	// of the latest refresh. The driver reads both.
	next      atomic.Uint64
	refreshed atomic.Uint64
	// shedFor is the idle time CloseIdle asked for, in nanoseconds, until
	// the runnable takes it; -1 for none.
	shedFor atomic.Int64
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
		// Made here so that firing timers never allocates.
		twBatch: make([]*Timer, 0, reapBatch),
	}
	if h.cfg.wheel == Hierarchical {
		l.wheel = new(packwheel.Wheel[*slot])
	} else {
		l.wheel = packwheel.NewHashed[*slot](packwheel.HashedOptions{Slots: h.cfg.slots})
	}
	l.next.Store(packwheel.MaxTick)
	l.shedFor.Store(-1)
	return l
}

// stampNow returns the current epoch as a stamp for an event happening
// now, and makes sure a refresh will end the epoch.
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
	s.c, s.last, s.stall, s.pend = c, stampSettled, l.cfg.stallTicks, 0
	*s.lim() = limits{
		born:   now,
		lastAt: now,
		since:  stampSettled,
		idle:   l.cfg.idleTicks,
		life:   l.cfg.lifeTicks,
	}
	due, _ := l.due(s, now)
	l.arm(s, due, now)
	s.owner.Store(l)
	l.tracked.Add(1)
}

// release stops tracking the connection in s, which this loop owns.
func (l *loop) release(s *slot) {
	l.wheel.Cancel(&s.timer)
	s.c = nil
	s.owner.Store(nil)
	l.tracked.Add(-1)
	l.timers.Store(int64(l.wheel.Len()))
}

// arm makes s's timer fire by due (as the loop stands at tick now, or
// later), unless it already does: a timer that fires before its
// connection is due is re-armed for the time left, so limits that move
// later need no work. No timer is set further than the horizon ahead, so
// that it fires while the ring still remembers the refreshes its stamps
// need (see settle), and a hashed wheel's revolution spans it. O(1).
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

// wantBy makes sure the driver runs the loop by tick due: it publishes due
// as the loop's next and wakes the driver, if it is earlier than the next
// the loop published.
func (l *loop) wantBy(due uint64) {
	if due < l.next.Load() {
		l.next.Store(due)
		l.h.nudge()
	}
}

// Run is the runnable the driver sends to the loop: it refreshes the
// loop's clock, closes what CloseIdle asked for, advances the wheel and
// deals with what expired. It always returns nil, since gnet stops a loop
// whose task returns its shutdown error.
func (l *loop) Run(context.Context) error {
	l.pending.Store(false)
	if l.stopped.Load() {
		return nil
	}
	now := l.h.clock.Tick(l.h.now())
	if now > l.ring[l.epoch&l.mask] {
		l.epoch++
		l.ring[l.epoch&l.mask] = now
		l.refreshed.Store(now)
		l.busy.Store(false)
	}
	if d := l.shedFor.Swap(-1); d >= 0 {
		l.shed(time.Duration(d), now)
	}
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
	return nil
}

// runTimers fires the loop's Timers due by tick now, a batch at a time,
// and comes back for the rest after gnet has served the I/O waiting.
func (l *loop) runTimers(now uint64) {
	if l.tw.Len() == 0 || l.stopped.Load() {
		return
	}
	batch, done := l.tw.AppendExpired(l.twBatch[:0], now, reapBatch)
	for _, t := range batch {
		l.fireTimer(t)
	}
	clear(batch)
	l.twBatch = batch[:0]
	if !done {
		l.dispatch()
	}
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
	l.settle(&s.last, &m.lastAt)
	l.settle(&m.since, &m.sinceAt)
	if s.stall != 0 {
		l.watchOutput(s, now)
	}
	due, why := l.due(s, now)
	if due > now {
		if s.stall != 0 && s.pend != 0 {
			// Look again at the next tick: a drain must be seen when it
			// comes, for the stall to count from it.
			due = now + 1
		}
		l.arm(s, due, now)
		return false
	}
	l.reap(s, why)
	return true
}

// reap closes the connection in s for why, which OnReap and Stats hear of.
func (l *loop) reap(s *slot, why Reason) {
	c := s.c
	l.h.reaped[why-1].Add(1)
	if f := l.cfg.onReap; f != nil {
		f(c, why)
	}
	_ = l.el.Close(c)
	if s.owner.Load() == l && s.c == c && !l.stopped.Load() {
		// OnShutdown sets stopped before it drops the table, so an
		// OnClose that found no slot for c saw stopped set.
		panic(fmt.Sprintf("idleconn: descriptor %d closed without OnClose: "+
			"a handler wrapping idleconn.Handler must pass OnClose on", c.Fd()))
	}
}

// due returns the tick at which the earliest of s's limits closes it, and
// which limit that is, as the loop stands at tick now; packwheel.MaxTick
// and 0 if every limit is off. On a tie idle wins, then the deadline, the
// write stall and the lifetime.
func (l *loop) due(s *slot, now uint64) (uint64, Reason) {
	m := s.lim()
	due, why := packwheel.MaxTick, Reason(0)
	if m.idle != 0 {
		due, why = l.stampDue(s.last, m.lastAt, m.idle, now), Idle
	}
	if m.deadline != 0 && m.deadline < due {
		due, why = m.deadline, Deadline
	}
	if s.stall != 0 && s.pend != 0 {
		if d := l.stampDue(m.since, m.sinceAt, s.stall, now); d < due {
			due, why = d, WriteStall
		}
	}
	if m.life != 0 && m.born+m.life < due {
		due, why = m.born+m.life, Lifetime
	}
	return due, why
}

// stampDue returns the tick at which a limit of ticks, counted from the
// event stamped (stamp, at), is reached, as the loop stands at tick now.
//
// An event stamped with epoch e came before the refresh of epoch e+1
// began, so before the end of that refresh's tick, and the limit counts
// from there (ticks includes the one for that tick). An event stamped with
// the current epoch came after the latest refresh: its limit is estimated
// from the next tick and checked again when the timer fires. A stamp older
// than the ring counts from the oldest refresh remembered, which is later
// than the truth: late, never early. arm's horizon keeps stamps from
// growing that old before expire settles them.
func (l *loop) stampDue(stamp, at, ticks, now uint64) uint64 {
	switch {
	case stamp == stampSettled:
		return at + ticks
	case stamp >= l.epoch:
		return now + 1 + ticks
	}
	return l.endOf(stamp) + ticks
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

// settle turns the stamp *stamp into a tick, in *at, once its epoch has
// ended, so that it no longer depends on the ring.
func (l *loop) settle(stamp, at *uint64) {
	if *stamp != stampSettled && *stamp < l.epoch {
		*at = l.endOf(*stamp)
		*stamp = stampSettled
	}
}

// watchOutput looks at the outbound data pending on s's connection, whose
// write stall timeout is on, as the loop stands at tick now (or later): if
// some began pending, or some drained since it last looked, the write stall
// timeout counts from now. O(1).
func (l *loop) watchOutput(s *slot, now uint64) {
	m, p := s.lim(), s.c.OutboundBuffered()
	switch {
	case p == 0:
		s.pend = 0
	case s.pend == 0 || p < s.pend:
		s.pend, m.since = p, l.stampNow()
		l.arm(s, now+1, now) // expire looks each tick while data is pending
	default:
		s.pend = p
	}
}

// shed closes every connection of this loop that is idle for at least d
// as of tick now: with no data for d, no outbound data pending and no
// deadline set. O(descriptors tracked by the whole Handler).
func (l *loop) shed(d time.Duration, now uint64) {
	ticks := limitTicks(d, l.cfg.tick)
	for _, ch := range l.h.table.chunks() {
		if ch == nil {
			continue
		}
		for i := range ch.slots {
			s := &ch.slots[i]
			if s.owner.Load() != l || s.lim().deadline != 0 || s.c.OutboundBuffered() != 0 {
				continue
			}
			if ticks != 0 && l.stampDue(s.last, s.lim().lastAt, ticks, now) > now {
				continue
			}
			l.reap(s, Shed)
			if l.stopped.Load() {
				return
			}
		}
	}
}

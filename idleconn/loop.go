package idleconn

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// reapBatch is how many expired timers a loop's runnable takes from the
// wheel at a time, and about how many connections one run closes before it
// lets the loop serve I/O again: closing one costs a few system calls, and
// a burst of thousands expiring together must not stall the loop. Timers
// that are only re-armed cost far less, and do not count.
const reapBatch = 256

// noData is slot.last for a connection that has received nothing: it is
// idle since born, which is exact, whenever the loop's refreshes came.
const noData = math.MaxUint64

// loop is the reaper's state for one gnet event loop. Everything but el,
// which never changes, and the atomics belongs to that loop's goroutine:
// handler callbacks and the runnable, which gnet runs there.
type loop struct {
	el  gnet.EventLoop
	h   *Handler
	cfg *config

	wheel packwheel.Timers[*slot]
	batch []*slot

	// epoch counts the refreshes that saw the clock at a new tick; ring
	// holds the tick of each recent epoch, at index epoch&mask.
	epoch uint64
	ring  []uint64
	mask  uint64

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
	if h.cfg.wheel == Hierarchical {
		l.wheel = new(packwheel.Wheel[*slot])
	} else {
		l.wheel = packwheel.NewHashed[*slot](packwheel.HashedOptions{Slots: h.cfg.slots})
	}
	return l
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
	s.c, s.last, s.born = c, noData, now
	// The open came before the end of tick now.
	due := now + l.cfg.idleTicks
	if l.cfg.lifeTicks != 0 {
		due = min(due, now+l.cfg.lifeTicks)
	}
	l.wheel.Schedule(&s.timer, due, s)
	s.owner.Store(l)
	l.tracked.Add(1)
	l.timers.Store(int64(l.wheel.Len()))
}

// release stops tracking the connection in s, which this loop owns.
func (l *loop) release(s *slot) {
	l.wheel.Cancel(&s.timer)
	s.c = nil
	s.owner.Store(nil)
	l.tracked.Add(-1)
	l.timers.Store(int64(l.wheel.Len()))
}

// Run is the runnable the ticker sends to the loop: it refreshes the
// loop's clock, advances the wheel and deals with what expired. It always
// returns nil, since gnet stops a loop whose task returns its shutdown
// error.
func (l *loop) Run(context.Context) error {
	l.pending.Store(false)
	if l.stopped.Load() {
		return nil
	}
	now := l.h.clock.Tick(l.h.now())
	if now > l.ring[l.epoch&l.mask] {
		l.epoch++
		l.ring[l.epoch&l.mask] = now
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
	l.timers.Store(int64(l.wheel.Len()))
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
// connection if it is due, or re-arms the timer for the time it has left.
// It reports whether it closed the connection.
func (l *loop) expire(s *slot, now uint64) bool {
	if s.owner.Load() != l || s.timer.Active() || l.stopped.Load() {
		// Released by a callback run for an earlier slot of the same
		// batch (and maybe taken by another loop since), or re-armed; or
		// the engine is stopping, and will close everything itself.
		return false
	}
	due, why := s.born+l.cfg.idleTicks, Idle
	if s.last != noData {
		due = l.idleDue(s.last, now)
	}
	if l.cfg.lifeTicks != 0 && s.born+l.cfg.lifeTicks < due {
		due, why = s.born+l.cfg.lifeTicks, Lifetime
	}
	if due > now {
		l.wheel.Schedule(&s.timer, due, s)
		return false
	}
	c := s.c
	l.h.reaped[why-Idle].Add(1)
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
	return true
}

// idleDue returns the tick at which a connection whose data last came in
// epoch last is due, as the loop stands at tick now.
//
// The data came before the refresh of epoch last+1 began, so before the end
// of that refresh's tick; it is due Timeout after that, which idleTicks
// counts. Data stamped with the current epoch came after this refresh: its
// deadline is estimated from the next tick and checked again when it fires.
// A stamp older than the ring is overdue: every epoch is a distinct tick,
// so the ring spans at least len(ring)-1 >= idleTicks+1 ticks.
func (l *loop) idleDue(last, now uint64) uint64 {
	if last >= l.epoch {
		return now + 1 + l.cfg.idleTicks
	}
	next := last + 1
	if oldest := l.epoch - l.mask; l.epoch >= l.mask && next < oldest {
		next = oldest
	}
	return l.ring[next&l.mask] + l.cfg.idleTicks
}

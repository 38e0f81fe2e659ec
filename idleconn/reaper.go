package idleconn

import (
	"context"
	"fmt"

	"github.com/packwheel/packwheel"
)

// The reaper: the runnable the driver sends a loop when it has work, which
// advances the loop's wheel and closes the connections whose limit came.
// A connection has one timer, armed for the earliest of its timed limits
// (timedLimits); the reason is decided when it fires. A timer that fires
// before its connection is due, because data came or a limit moved later
// since it was armed, is re-armed for the time left, so that neither the
// data path nor a setter moving a limit later touches the wheel.

// reapBatch is how many expired timers a loop's runnable takes from the
// wheel at a time, and about how many connections one run closes before it
// lets the loop serve I/O again: closing one costs a few system calls, and
// a burst of thousands expiring together must not stall the loop. Timers
// that are only re-armed cost far less, and do not count.
const reapBatch = 256

// timedLimits are the limits a connection's timer waits for, each with the
// tick at which it closes the connection as the loop stands at tick now
// (packwheel.MaxTick for none), in the order that breaks a tie.
var timedLimits = [...]struct {
	why Reason
	due func(l *loop, s *slot, now uint64) uint64
}{
	{Idle, idleDue},
	{Deadline, deadlineDue},
	{WriteStall, stallDue},
	{SlowDrain, drainDue},
	{Lifetime, lifetimeDue},
	{Linger, lingerDue},
}

// Run is the runnable the driver sends to the loop: it refreshes the
// loop's clock, takes what CloseIdle and Shutdown asked for, looks at the
// output it polls, advances the wheel and deals with what expired, and
// fires the loop's Timers. It always returns nil, since gnet stops a loop
// whose task returns its shutdown error.
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
	l.shed(now)
	l.overload(now)
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
	if l.h.shutting.Load() {
		l.wantBy(now + 1) // Shutdown's pass looks again each tick
	}
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
		if why := l.observe(s, c.OutboundBuffered(), now, false); why != 0 {
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
	if due > now {
		l.arm(s, due, now)
		return false
	}
	l.reap(s, why)
	return true
}

// dueOf returns the tick at which the earliest of s's timed limits closes
// it, and which limit that is, as the loop stands at tick now;
// packwheel.MaxTick and 0 if every limit is off.
func (l *loop) dueOf(s *slot, now uint64) (uint64, Reason) {
	due, why := packwheel.MaxTick, Reason(0)
	for _, k := range timedLimits {
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
// of. It runs in the loop's runnable, never inside a callback of gnet's
// for the connection, where the data path returns gnet.Close instead.
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

// reaping counts a close for why and tells OnReap, before the close.
func (l *loop) reaping(s *slot, why Reason) {
	l.h.reaped[why-1].Add(1)
	if f := l.cfg.onReap; f != nil {
		f(s.conn(), why)
	}
}

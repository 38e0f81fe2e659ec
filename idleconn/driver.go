package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

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
		if next := h.wake(now); next != packwheel.MaxTick {
			timer.Reset(h.clock.Until(now, next))
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
// if only a nudge can bring work. Safe from any goroutine (the driver, or
// a test); O(loops), and one EventLoop.Execute per loop sent.
func (h *Handler) wake(t time.Time) uint64 {
	now := h.clock.Tick(t)
	next := packwheel.MaxTick
	for _, l := range h.loops.all() {
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
	return next
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

// OnTick calls the wrapped handler's OnTick and returns what it returns:
// the reaper needs no ticker, and gnet calls OnTick only for an engine run
// with gnet.WithTicker(true).
func (h *Handler) OnTick() (time.Duration, gnet.Action) {
	return h.user.OnTick()
}

// CloseIdle closes, on each event loop, every tracked connection idle for
// at least d: one that has received nothing for d (counted like the idle
// timeout, so from SetIdleTimeout too, and known to within Resolution: one
// idle for less than d+Resolution may be spared), has no outbound data
// pending and no deadline set, that is, one between requests. It serves graceful
// shutdown (CloseIdle(0) closes every connection not busy) and load
// shedding. Safe from any goroutine: it only asks each loop, through
// EventLoop.Execute, and returns before the loops have run it; calls that
// come before a loop runs merge, the latest d winning. The closes are
// counted as Shed. Each loop scans the descriptor table: O(descriptors). It
// panics, with a message starting "idleconn: ", if d is negative.
func (h *Handler) CloseIdle(d time.Duration) {
	if d < 0 {
		panic("idleconn: CloseIdle: negative duration " + d.String())
	}
	for _, l := range h.loops.all() {
		l.shedFor.Store(int64(d))
		l.dispatch()
	}
}

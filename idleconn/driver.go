package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
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
	for _, l := range h.loops.all() {
		if at := l.pollAt.Load(); at <= since {
			l.dispatch()
		} else {
			poll = min(poll, at)
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

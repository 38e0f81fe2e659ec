package idleconn

import (
	"time"

	"github.com/panjf2000/gnet/v2"
)

// OnTick sends the reaper's runnable to every loop that tracks a
// connection, and calls the wrapped handler's OnTick when the delay it last
// returned has passed. It returns the shorter of the two delays: the
// reaper's wakes it just after the start of each tick, four times per
// Resolution, so that each loop sees every tick. A wrapped OnTick that
// returns a delay of zero or less (as gnet.BuiltinEventEngine's does) is
// called once per reaper tick rather than without pause. The wrapped
// handler's action is returned.
//
// gnet calls OnTick on a goroutine of its own; it touches no wheel, and
// costs one EventLoop.Execute (a small allocation inside gnet) per busy
// loop per tick.
func (h *Handler) OnTick() (time.Duration, gnet.Action) {
	now := h.now()
	for _, l := range h.loops.all() {
		if l.tracked.Load() > 0 {
			l.dispatch()
		}
	}
	delay := h.clock.Until(h.clock.Tick(now)+1, now)
	action := gnet.None
	if !now.Before(h.userNext) {
		var d time.Duration
		d, action = h.user.OnTick()
		h.userNext = now.Add(max(d, 0))
	}
	if wait := h.userNext.Sub(now); wait > 0 && wait < delay {
		delay = wait
	}
	return delay, action
}

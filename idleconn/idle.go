package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The idle timeout: Options.Timeout, per connection SetIdleTimeout, reason
// Idle. It counts from the latest data received, stamped by the data path
// in the slot's own line (slot.last), or the latest look that found some
// pending output read by the peer (output.go), so that OnTraffic moves no
// timer and a long answer to a peer that reads it is not cut:
// the timer, armed for the due this gives at the time, fires early when
// data came since, and is re-armed for the time left. Overload shortens
// it (overloadedIdle).

// SetIdleTimeout sets how long c may be idle (receive nothing, and have
// none of its pending output read) before it is closed, counted from now
// (and from each data received or output read after), in place of
// Options.Timeout; zero turns the idle limit off for c. A keep-alive HTTP
// server sets its long timeout between requests and turns it off while a
// request is being read or answered, which a deadline and the output
// limits bound instead; CloseIdle and Shutdown take a connection whose
// idle timeout is off for one that is busy. It panics, with a message
// starting "idleconn: ", if d is negative, before changing anything.
// It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation.
func (h *Handler) SetIdleTimeout(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetIdleTimeout", c, d)
	if s == nil {
		return false
	}
	s.lim().idle = ticks
	if ticks != 0 {
		s.last = l.stamp()
		h.rearm(s, l)
	}
	return true
}

// idleDue is the idle timeout's due tick.
func idleDue(l *loop, s *slot, now uint64) uint64 {
	ticks := s.lim().idle
	if ticks == 0 {
		return packwheel.MaxTick
	}
	return l.due(s.last, l.overloadedIdle(ticks), now)
}

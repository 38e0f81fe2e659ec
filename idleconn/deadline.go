package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The deadline: per connection SetDeadline, reason Deadline. No option:
// it is a point in time, set per request.

// SetDeadline closes c at t, however much data it receives, unless it is
// moved or cleared first; the zero time clears it. A deadline already past
// closes c at the loop's next run. A server stops a slowloris client with
// it: set when a request's first byte arrives, cleared when the request is
// complete. While set it also marks c busy for CloseIdle and Shutdown.
// It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation.
func (h *Handler) SetDeadline(c gnet.Conn, t time.Time) bool {
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().deadline = 0
	if !t.IsZero() {
		// The first tick that begins at or after t: never early. Tick 0
		// is the clock's origin, so a deadline there is one already past
		// and moves to tick 1, 0 meaning none.
		s.lim().deadline = max(h.clock.Deadline(t, 0), 1)
		h.rearm(s, l)
	}
	return true
}

// deadlineDue is the deadline's due tick.
func deadlineDue(_ *loop, s *slot, _ uint64) uint64 {
	if d := s.lim().deadline; d != 0 {
		return d
	}
	return packwheel.MaxTick
}

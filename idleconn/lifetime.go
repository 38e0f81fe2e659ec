package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The maximum lifetime: Options.MaxLifetime, per connection
// SetMaxLifetime, reason Lifetime.

// lifetime is a connection's lifetime limit.
type lifetime struct {
	born  uint64 // tick of the open
	ticks uint64 // like config.idleTicks, counted from born; 0 off
}

// SetMaxLifetime sets how long c may stay open, counted from its open, in
// place of Options.MaxLifetime; zero turns the limit off for c. A lifetime
// already exceeded closes c at the loop's next run. It panics, with a
// message starting "idleconn: ", if d is negative, before changing
// anything. It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation.
func (h *Handler) SetMaxLifetime(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetMaxLifetime", c, d)
	if s == nil {
		return false
	}
	s.lim().life.ticks = ticks
	h.rearm(s, l)
	return true
}

// lifetimeDue is the lifetime's due tick.
func lifetimeDue(_ *loop, s *slot, _ uint64) uint64 {
	if m := s.lim().life; m.ticks != 0 {
		return m.born + m.ticks
	}
	return packwheel.MaxTick
}

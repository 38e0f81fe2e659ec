package idleconn

import (
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The write stall: Options.WriteStallTimeout, per connection
// SetWriteStallTimeout, reason WriteStall. It counts from the latest look
// (output.go) that found output beginning to pend or some drained.

// writeStall is a connection's write stall limit.
type writeStall struct {
	ticks uint64 // like config.idleTicks; 0 off
	since stamp  // the latest progress, while output is pending
}

// SetWriteStallTimeout sets how long c may have output pending with none
// of it drained before it is closed, in place of
// Options.WriteStallTimeout; zero turns the limit off for c. Pending
// output counts from this call if some is pending, and any drain seen at
// a later look restarts the count: output written outside the package's
// sight is seen at the next look. While output is pending the
// connection's timer fires each tick (a quarter of Resolution) to look,
// so that the count restarts at the drain itself (TestWriteStall). It
// panics, with a message starting "idleconn: ", if d is negative, before
// changing anything. It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation.
func (h *Handler) SetWriteStallTimeout(c gnet.Conn, d time.Duration) bool {
	ticks, s, l := h.setting("SetWriteStallTimeout", c, d)
	if s == nil {
		return false
	}
	s.lim().stall.ticks = ticks
	s.pend = 0 // count from now
	l.look(s, c.OutboundBuffered(), h.clock.Tick(h.now()), true)
	return true
}

// stallDue is the write stall's due tick. A connection closing after flush
// whose write stall timeout is off must still drain: at least some of its
// output every idle timeout, since it no longer has one of its own.
func stallDue(l *loop, s *slot, now uint64) uint64 {
	m := s.lim()
	ticks := m.stall.ticks
	if ticks == 0 && s.flags&closing != 0 {
		ticks = l.cfg.idleTicks
	}
	if ticks == 0 || s.pend == 0 {
		return packwheel.MaxTick
	}
	return l.due(m.stall.since, ticks, now)
}

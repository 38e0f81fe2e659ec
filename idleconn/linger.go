package idleconn

import (
	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// The lingering close: CloseAfterFlush, Options.Linger, reason Linger.
// gnet's own close (returning gnet.Close, or EventLoop.Close) writes what
// the socket takes at once and drops the rest, and closing a socket that
// still has unread input makes the kernel send a reset, which can destroy
// the response the peer has not read yet. nginx's answer, taken here: let
// the output drain, shut the write side so the peer reads the end of the
// response, then read and discard until the peer closes, for a bounded
// time.

// CloseAfterFlush closes c once its pending output has drained: from this
// call the wrapped handler hears of no more traffic for c (its input is
// discarded), c's idle timeout and deadline are off, and its output must
// keep draining under the write stall timeout (or, if that is off, some
// every idle timeout), the drain rate and Max; once drained, c's write
// side is shut, and c stays open, discarding input, until the peer closes
// or Options.Linger has passed (reason Linger). Write nothing to c after
// it, and return gnet.None, not gnet.Close, from the callback that calls
// it. It must be called on c's loop, from a handler callback or a
// runnable, and reports false, doing nothing, if c is not tracked. O(1),
// no allocation.
func (h *Handler) CloseAfterFlush(c gnet.Conn) bool {
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	if s.flags&closing != 0 {
		return true
	}
	s.flags |= closing
	m := s.lim()
	m.idle, m.deadline = 0, 0
	now := h.clock.Tick(h.now())
	if l.look(s, c.OutboundBuffered(), now, true) != 0 {
		l.arm(s, now, now) // over Max: the next run closes it
	}
	return true
}

// shutWrite shuts the write side of s's connection, whose output has
// drained, and lets it linger from tick now.
func (l *loop) shutWrite(s *slot, now uint64) {
	s.flags |= shut
	m := s.lim()
	m.linger = now + 1 + l.cfg.lingerTicks
	if l.h.shutdownWrite(m.c.Fd()) != nil {
		m.linger = now // the peer is gone: close at the next run
	}
	l.arm(s, m.linger, now)
}

// lingerDue is the lingering close's due tick.
func lingerDue(_ *loop, s *slot, _ uint64) uint64 {
	if s.flags&shut != 0 {
		return s.lim().linger
	}
	return packwheel.MaxTick
}

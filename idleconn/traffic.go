package idleconn

import (
	"net"

	"github.com/panjf2000/gnet/v2"
)

// The data path: what OnTraffic adds to the wrapped handler's, top to
// bottom. BenchmarkOnTraffic measures it; TestZeroAllocs asserts it
// allocates nothing.

// OnTraffic records that c received data, then calls the wrapped handler's
// OnTraffic, then checks c's input and output against their bounds. The
// record is one number stored in the descriptor's line of the table: no
// lock, no allocation, no timer moved. The checks read c's inbound and
// outbound buffer sizes; only output pending takes it further (output.go).
// A connection closing after flush has its input discarded and the
// wrapped handler is not called. A bound exceeded closes c: OnTraffic
// tells OnReap and returns gnet.Close.
//
// It skips the checks Touch makes: gnet calls OnTraffic on c's own loop,
// and only for the connection that holds c's descriptor.
func (h *Handler) OnTraffic(c gnet.Conn) gnet.Action {
	s := h.table.lookup(c.Fd())
	var l *loop
	if s != nil {
		l = s.owner.Load()
	}
	if l == nil {
		if _, udp := c.LocalAddr().(*net.UDPAddr); udp {
			// gnet calls no OnOpen for UDP: nothing could ever be closed.
			panic("idleconn: a UDP engine has no connections to close; " +
				"idleconn.Handler serves TCP and Unix-socket engines only")
		}
		return h.user.OnTraffic(c)
	}

	// Received data: the idle timeout counts from now. The timer stays as
	// it is; when it fires, expire re-arms it for the time left.
	s.last.epoch = l.epoch
	if !l.busy.Load() {
		l.markBusy()
	}
	if s.flags&closing != 0 {
		_, _ = c.Discard(-1) // lingering: the peer's late bytes go
		return gnet.None
	}
	// Output was pending: see what drained before the handler writes.
	if s.pend != 0 {
		if why := l.observe(s, c.OutboundBuffered(), l.lastTick(), false); why != 0 {
			l.reaping(s, why)
			return gnet.Close
		}
		if s.owner.Load() != l {
			return h.user.OnTraffic(c) // untracked by OnWritable
		}
	}

	action := h.user.OnTraffic(c)
	if action != gnet.None || s.owner.Load() != l {
		return action // closing anyway, or untracked by the handler
	}

	// What the handler left unconsumed, and what it wrote that the peer
	// has not read.
	if l.inputFull(c) {
		l.reaping(s, InputFull)
		return gnet.Close
	}
	if p := c.OutboundBuffered(); p != 0 || s.pend != 0 {
		if why := l.observe(s, p, l.lastTick(), true); why != 0 {
			l.reaping(s, why)
			return gnet.Close
		}
	}
	return action
}

package idleconn

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// fakeClock is the time source of the unit tests and benchmarks.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// fakeLoop stands for a gnet event loop: it queues runnables for the test
// to run, and closes connections the way gnet does, calling OnClose. Its
// other methods panic (nil embedded interface).
type fakeLoop struct {
	gnet.EventLoop
	h      gnet.EventHandler // told of closes
	mu     sync.Mutex        // Execute may come from any goroutine
	queued []gnet.Runnable
}

func (l *fakeLoop) Execute(_ context.Context, r gnet.Runnable) error {
	l.mu.Lock()
	l.queued = append(l.queued, r)
	l.mu.Unlock()
	return nil
}

func (l *fakeLoop) Close(c gnet.Conn) error {
	fc := c.(*fakeConn)
	if fc.open {
		fc.open = false
		l.h.OnClose(c, nil)
	}
	return nil
}

// runQueued runs what was queued, as the loop would, until nothing is.
func (l *fakeLoop) runQueued() {
	for {
		l.mu.Lock()
		if len(l.queued) == 0 {
			l.mu.Unlock()
			return
		}
		// Shifted down rather than resliced, so that the queue's array is
		// reused and Execute allocates nothing once it has grown: the
		// benchmarks' allocations are then the Handler's own
		// (BenchmarkReaperTick). gnet's own Execute makes a closure per call.
		r := l.queued[0]
		n := copy(l.queued, l.queued[1:])
		l.queued[n] = nil
		l.queued = l.queued[:n]
		l.mu.Unlock()
		_ = r.Run(context.Background())
	}
}

// fakeConn stands for a gnet connection: an fd, a loop and a context. Its
// other methods panic.
type fakeConn struct {
	gnet.Conn
	fd    int
	loop  *fakeLoop
	open  bool
	ctx   any
	reads int32 // counted by benchmarks, as gnet points c.buffer at new data
	out   int32 // outbound bytes pending
	in    int32 // inbound bytes unconsumed
}

func (c *fakeConn) Fd() int                   { return c.fd }
func (c *fakeConn) EventLoop() gnet.EventLoop { return c.loop }
func (c *fakeConn) Context() any              { return c.ctx }
func (c *fakeConn) SetContext(v any)          { c.ctx = v }
func (c *fakeConn) OutboundBuffered() int     { return int(c.out) }
func (c *fakeConn) InboundBuffered() int      { return int(c.in) }
func (c *fakeConn) Discard(n int) (int, error) {
	if n <= 0 || n > int(c.in) {
		n = int(c.in)
	}
	c.in -= int32(n)
	return n, nil
}
func (c *fakeConn) LocalAddr() net.Addr { return fakeAddr }

// fakeAddr is every fake connection's local address: a TCP one.
var fakeAddr net.Addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}

// openFake opens a fake connection with the given fd on l, through h.
func openFake(h *Handler, l *fakeLoop, fd int) *fakeConn {
	c := &fakeConn{fd: fd, loop: l, open: true}
	h.OnOpen(c)
	return c
}

// nopHandler is a wrapped handler that does nothing, for benchmarks and
// allocation tests.
type nopHandler struct{ gnet.BuiltinEventEngine }

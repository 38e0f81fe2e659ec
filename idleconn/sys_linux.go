package idleconn

import (
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// tcpNotSentLowat is TCP_NOTSENT_LOWAT (linux/tcp.h), which package
// syscall names on some Linux platforms only.
const tcpNotSentLowat = 0x19

// boundUnsent has the kernel hold at most n bytes unsent for the socket
// fd (Options.MaxUnsent): a write past them returns EAGAIN, and gnet
// keeps the rest. A socket that refuses it, not TCP, keeps the kernel's
// own bound, which is all a failure could mean.
func boundUnsent(fd, n int) {
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, tcpNotSentLowat, n)
}

// acceptsOneByOne reports whether the listening socket fd is one of a
// group that gnet.WithReusePort made, one per event loop (SO_REUSEPORT):
// each loop then accepts a connection and opens it, and so refuses it,
// before it accepts the next.
func acceptsOneByOne(fd int) bool {
	v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, soReusePort)
	return err == nil && v != 0
}

// limitBacklog sets the listen backlog of eng's listener to n, where gnet
// lets it be reached, an engine of one listener (Engine.Dup; not one run
// with gnet.Rotate on several), and where gnet's main reactor accepts for
// every event loop: a listen on a socket already listening changes its
// backlog alone. With gnet.WithReusePort (acceptsOneByOne) there is no
// main reactor, and the backlog stays.
func limitBacklog(eng gnet.Engine, n int) {
	fd, err := eng.Dup()
	if err != nil {
		return
	}
	if !acceptsOneByOne(fd) {
		_ = syscall.Listen(fd, n)
	}
	_ = syscall.Close(fd)
}

package idleconn

import (
	"encoding/binary"
	"syscall"
	"unsafe"

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

// tcpiBytesAcked is the offset in struct tcp_info (linux/tcp.h) of
// tcpi_bytes_acked, the bytes the peer has acknowledged since the
// connection opened (Linux 4.1).
const tcpiBytesAcked = 120

// unreadQueue returns how many bytes of output the kernel's send queue of
// the TCP socket fd holds that its peer has not acknowledged, sent or not
// (SIOCOUTQ, which is TIOCOUTQ), and how many the peer has acknowledged
// since the connection opened (TCP_INFO). A socket that does not answer
// either, or a kernel older than 4.1, reports an empty queue: the close
// stays plain, as it was.
func unreadQueue(fd int) (acked, queued uint64) {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n))); errno != 0 || n <= 0 {
		return 0, 0
	}
	var info [256]byte
	size := uint32(len(info))
	_, _, errno := syscall.Syscall6(sysGetsockopt, uintptr(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 || size < tcpiBytesAcked+8 {
		return 0, 0
	}
	return binary.NativeEndian.Uint64(info[tcpiBytesAcked:]), uint64(n)
}

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

// The fields of struct tcp_info (linux/tcp.h) that unreadQueue reads, by
// their offsets: the segments sent and not yet acknowledged (tcpi_unacked),
// the bytes the peer has acknowledged (tcpi_bytes_acked, Linux 4.1) and
// those not yet sent (tcpi_notsent_bytes, Linux 4.6), and the size of the
// struct up to the last of them.
const (
	tcpiUnacked      = 24
	tcpiBytesAcked   = 120
	tcpiNotsentBytes = 144
	tcpInfoNeeded    = tcpiNotsentBytes + 4
)

// unreadQueue reports whether the kernel's send queue of the TCP socket fd
// holds output its peer has not acknowledged, sent or not, and how many
// bytes the peer has acknowledged since the connection opened (TCP_INFO).
// A socket that does not answer, or a kernel older than 4.6, which lacks
// the fields, reports an empty queue: the close stays plain, as it was.
func unreadQueue(fd int) (acked uint64, queued bool) {
	var info [256]byte
	size := uint32(len(info))
	_, _, errno := syscall.Syscall6(sysGetsockopt, uintptr(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 || size < tcpInfoNeeded {
		return 0, false
	}
	ne := binary.NativeEndian
	queued = ne.Uint32(info[tcpiUnacked:]) != 0 || ne.Uint32(info[tcpiNotsentBytes:]) != 0
	return ne.Uint64(info[tcpiBytesAcked:]), queued
}

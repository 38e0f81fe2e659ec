package idleconn

import "syscall"

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

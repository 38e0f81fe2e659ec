//go:build linux

package engine

import (
	"syscall"

	"github.com/panjf2000/gnet/v2"
)

// tcpNotSentLowat is TCP_NOTSENT_LOWAT (linux/tcp.h), which package
// syscall names on some Linux platforms only.
const tcpNotSentLowat = 0x19

// BoundUnsent has the kernel hold at most n bytes unsent for c's socket:
// TCP_NOTSENT_LOWAT, which makes a write return EAGAIN past them, so that
// gnet keeps the rest in its outbound buffer, where idleconn counts it
// against the output limit and the budget. Without it, a client that reads
// nothing holds as much in the kernel's send queue as autotuning lets it
// grow, up to net.ipv4.tcp_wmem's largest (4 MiB by default), memory that
// no RSS shows: 1,000 slow readers of 1 MiB answers held 1.9 GiB of it
// from examples/httpserver, and the loops' copying it stalled other
// clients for a second (bench/results/httpserver-unsent.txt). What is in
// flight is not bounded by it: a fast client far away still gets a
// window's worth. Call it from OnOpen, on c's loop; a failure leaves the
// kernel's own bound, as n = 0 does. examples/httpserver's
// TestUnsentBound reads the bound from outside, in /proc/net/tcp.
func BoundUnsent(c gnet.Conn, n int) error {
	if n == 0 {
		return nil
	}
	return syscall.SetsockoptInt(c.Fd(), syscall.IPPROTO_TCP, tcpNotSentLowat, n)
}

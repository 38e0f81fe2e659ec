//go:build linux

package main

import "syscall"

// tcpNotSentLowat is TCP_NOTSENT_LOWAT (linux/tcp.h), which package
// syscall names on some Linux platforms only.
const tcpNotSentLowat = 0x19

// boundUnsent has the kernel hold at most n bytes unsent for the socket
// fd: TCP_NOTSENT_LOWAT, which makes a write return EAGAIN past them, so
// that gnet keeps the rest, where idleconn counts it against -max-output
// and the budget. Without it, a client that reads nothing holds as much of
// its answer in the kernel's send buffer as autotuning lets it grow, up to
// net.ipv4.tcp_wmem's largest (4 MiB by default): 1,000 slow readers of
// 1 MiB answers held 1.9 GiB of kernel memory, invisible in the server's
// RSS, and the loops' copying it stalled other clients for a second
// (bench/results/httpserver-unsent.txt). What is in flight is not bounded
// by it: a fast client far away still gets a window's worth.
// TestUnsentBound reads the bound from outside, in /proc/net/tcp.
func boundUnsent(fd, n int) error {
	return syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, tcpNotSentLowat, n)
}

//go:build unix

package idleconn

import "syscall"

// shutdownWrite shuts the write side of the socket fd, sending the peer
// the end of the stream.
func shutdownWrite(fd int) error { return syscall.Shutdown(fd, syscall.SHUT_WR) }

//go:build unix

package idleconn

import "syscall"

// The system calls the package makes beyond gnet's.

// shutdownWrite shuts the write side of the socket fd, sending the peer
// the end of the stream.
func shutdownWrite(fd int) error { return syscall.Shutdown(fd, syscall.SHUT_WR) }

// openFilesLimit returns the process's soft limit on open descriptors, or
// 0 if it cannot be read.
func openFilesLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Cur > 1<<31 {
		return 0
	}
	return int(r.Cur)
}

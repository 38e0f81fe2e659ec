//go:build unix

package idleconn

import "syscall"

// The system calls the package makes beyond gnet's.

// shutdownWrite shuts the write side of the socket fd, sending the peer
// the end of the stream.
func shutdownWrite(fd int) error { return syscall.Shutdown(fd, syscall.SHUT_WR) }

// abortOnClose has the close of the socket fd reset its connection and
// discard what the kernel still holds to send (SO_LINGER with a zero
// timeout), rather than keep sending it, orphaned, to a peer that does
// not read. A socket that refuses it closes plainly, which is all a
// failure could mean.
func abortOnClose(fd int) {
	_ = syscall.SetsockoptLinger(fd, syscall.SOL_SOCKET, syscall.SO_LINGER, &resetLinger)
}

// resetLinger is abortOnClose's option, made once: a pointer to a local
// would be a pointer the compiler cannot prove stays on the stack.
var resetLinger = syscall.Linger{Onoff: 1, Linger: 0}

// openFilesLimit returns the process's soft limit on open descriptors, or
// 0 if it cannot be read.
func openFilesLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Cur > 1<<31 {
		return 0
	}
	return int(r.Cur)
}

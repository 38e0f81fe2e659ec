//go:build linux && !386

package idleconn

import "syscall"

// sysGetsockopt is getsockopt(2)'s system call number.
const sysGetsockopt = syscall.SYS_GETSOCKOPT

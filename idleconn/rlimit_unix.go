//go:build unix

package idleconn

import "syscall"

// openFilesLimit returns the process's soft limit on open descriptors, or
// 0 if it cannot be read.
func openFilesLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Cur > 1<<31 {
		return 0
	}
	return int(r.Cur)
}

//go:build !linux

package idleconn

// boundUnsent does nothing: Options.MaxUnsent is Linux's TCP_NOTSENT_LOWAT,
// and the kernel's own bound stands elsewhere.
func boundUnsent(fd, n int) {}

// acceptsOneByOne reports false: gnet's listeners of one port per event
// loop are a Linux matter here (see the Linux version).
func acceptsOneByOne(int) bool { return false }

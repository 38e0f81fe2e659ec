//go:build !linux

package idleconn

// boundUnsent does nothing: Options.MaxUnsent is Linux's TCP_NOTSENT_LOWAT,
// and the kernel's own bound stands elsewhere.
func boundUnsent(fd, n int) {}

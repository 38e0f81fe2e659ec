//go:build linux && !(mips || mipsle || mips64 || mips64le)

package idleconn

// soReusePort is SO_REUSEPORT (asm-generic/socket.h), which package
// syscall does not name on Linux.
const soReusePort = 0xf

//go:build linux && (mips || mipsle || mips64 || mips64le)

package idleconn

// soReusePort is SO_REUSEPORT on MIPS (arch/mips/include/uapi/asm/socket.h).
const soReusePort = 0x200

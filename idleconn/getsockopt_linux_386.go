//go:build linux && 386

package idleconn

// sysGetsockopt is getsockopt(2)'s own system call number on 386
// (arch/x86/entry/syscalls/syscall_32.tbl), since Linux 4.3: package
// syscall knows only the older socketcall(2) there. An older kernel
// refuses it, and unreadQueue then reports an empty queue.
const sysGetsockopt = 365

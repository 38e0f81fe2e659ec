//go:build !linux

package idleconn

import "github.com/panjf2000/gnet/v2"

// boundUnsent does nothing: Options.MaxUnsent is Linux's TCP_NOTSENT_LOWAT,
// and the kernel's own bound stands elsewhere.
func boundUnsent(fd, n int) {}

// limitBacklog does nothing: the listen backlog is cut on Linux only,
// where whether gnet made a listener per event loop can be asked of the
// socket (acceptsOneByOne) and the burst measured (TestBurstAtFilesLimit).
func limitBacklog(gnet.Engine, int) {}

// unreadQueue reports an empty send queue: TCP_INFO's fields are Linux's,
// and an Idle close stays plain elsewhere.
func unreadQueue(int) (acked, queued uint64) { return 0, 0 }

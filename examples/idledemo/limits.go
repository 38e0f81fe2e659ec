//go:build unix

package main

import (
	"fmt"
	"syscall"

	"github.com/packwheel/packwheel/internal/cli"
)

// Descriptors the process holds besides its connections: standard files,
// the Go runtime's poller, the listener and its duplicate, with room to
// spare; and each event loop's poller and wake-up descriptor.
const (
	reservedDescriptors = 32
	descriptorsPerLoop  = 2
)

// descriptorLimit is the process's limit on open files and about how many
// a run needs.
type descriptorLimit struct {
	limit uint64
	need  uint64
}

func (l descriptorLimit) String() string {
	return fmt.Sprintf("ulimit -n is %d, and the clients alone need about %d", l.limit, l.need)
}

// checkDescriptors refuses a run of clients connections over loops event
// loops that would need more descriptors than the process may open: gnet
// would stop the whole server at the first accept that fails, and dials
// would fail. Each client holds one connection at a time, two descriptors
// in this process: its own end and the server's.
func checkDescriptors(clients, loops int) (descriptorLimit, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return descriptorLimit{}, fmt.Errorf("read the descriptor limit: %w", err)
	}
	l := descriptorLimit{limit: rl.Cur, need: uint64(2*clients + reservedDescriptors + descriptorsPerLoop*loops)}
	if l.need > l.limit {
		// Nothing has run, and the command line must change (or the
		// limit): a usage error, as for any value refused up front.
		return l, cli.Usagef("%d clients need about %d file descriptors, two per connection (client and server ends) "+
			"and some for the event loops, more than the limit of %d: raise it with ulimit -n, or run fewer clients",
			clients, l.need, l.limit)
	}
	return l, nil
}

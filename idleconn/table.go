package idleconn

import (
	"sync"
	"sync/atomic"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// slot is the reaper's state for one file descriptor: the connection that
// holds it, if tracked, its timer and its limits. A slot is two cache
// lines, aligned, so loops tracking neighbouring descriptors never write to
// the same line. The data path touches only the first line (owner, last
// and stall); the second holds the rest of the per-connection limits and
// stamps, read when the timer fires or a limit changes. TestSlotLayout guards the layout.
//
// owner is the loop that tracks the descriptor's connection, or nil. Only
// that loop's goroutine reads or writes the other fields. When a descriptor
// is closed on one loop and reused on another, the first loop's Store(nil)
// and the second's Load (which sees it) order their accesses.
//
// last and since are stamps: an epoch of the owner (the event came after
// the refresh of that epoch began and before the next one did) until the
// timer's next firing settles them into a tick (lastAt, sinceAt) while the
// owner's ring still remembers that next refresh; settled marks them so.
type slot struct {
	owner atomic.Pointer[loop]
	last  uint64 // stamp of the latest data, or of the open or SetIdleTimeout
	born  uint64 // tick of the open
	timer packwheel.Holder
	c     gnet.Conn
	// Limits in ticks, counted like config.idleTicks; 0 turns one off.
	// OnTraffic reads stall, so it shares the first line.
	stall, idle, life uint64

	lastAt   uint64 // last settled: the data came before the end of this tick
	sinceAt  uint64 // since settled
	since    uint64 // stamp of the latest write progress, while pend > 0
	pend     int    // outbound bytes pending when last looked; 0 for none
	deadline uint64 // first tick at or after the deadline; 0 for none
	_        [8]byte
}

// chunkBits sets how many slots a chunk holds: 1024, 128 KiB, which the Go
// allocator places on its own pages, so every slot is line-aligned.
const chunkBits = 10

type chunk [1 << chunkBits]slot

// fdTable maps descriptors to slots. Lookups load one atomic pointer and
// index two arrays; chunks, once made, never move (timers point into
// them), and adding one copies only the small directory, under a mutex.
//
// The zero value is an empty table ready to use.
type fdTable struct {
	dir atomic.Pointer[[]*chunk]
	mu  sync.Mutex
}

// lookup returns fd's slot, or nil if no connection with that descriptor
// was ever tracked. Safe from any goroutine; it allocates nothing.
func (t *fdTable) lookup(fd int) *slot {
	if d := t.dir.Load(); d != nil {
		if i := uint(fd) >> chunkBits; i < uint(len(*d)) {
			if ch := (*d)[i]; ch != nil {
				return &ch[fd&(1<<chunkBits-1)]
			}
		}
	}
	return nil
}

// get returns fd's slot, making its chunk if needed; fd must not be
// negative. It allocates only when it makes a chunk.
func (t *fdTable) get(fd int) *slot {
	if s := t.lookup(fd); s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var d []*chunk
	if p := t.dir.Load(); p != nil {
		d = *p
	}
	i := fd >> chunkBits
	if i >= len(d) || d[i] == nil {
		grown := make([]*chunk, max(len(d), i+1))
		copy(grown, d)
		grown[i] = new(chunk)
		t.dir.Store(&grown)
		d = grown
	}
	return &d[i][fd&(1<<chunkBits-1)]
}

// reset drops every chunk. Slots still scheduled in a wheel stay valid
// memory, but no lookup finds them again.
func (t *fdTable) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dir.Store(nil)
}

// chunks returns the chunks made so far, nil where none was. The slice
// must not be modified. Safe from any goroutine; no allocation.
func (t *fdTable) chunks() []*chunk {
	if d := t.dir.Load(); d != nil {
		return *d
	}
	return nil
}

package idleconn

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// slot is the reaper's state for one file descriptor that the data path
// touches: the connection that holds it, if tracked, the stamp of its
// latest data, its write stall timeout and pending output; and its timer. A
// slot is one cache line, so loops tracking neighbouring descriptors never
// write to the same line, and the data path reads no other. The rest of a
// connection's state, its limits, lives in a second line at a fixed
// distance in the same chunk (lim), read when the timer fires or a limit
// changes. TestSlotLayout guards the layout.
//
// owner is the loop that tracks the descriptor's connection, or nil. Only
// that loop's goroutine reads or writes the other fields, and the limits.
// When a descriptor is closed on one loop and reused on another, the first
// loop's Store(nil) and the second's Load (which sees it) order their
// accesses.
type slot struct {
	owner atomic.Pointer[loop]
	// last is a stamp: an epoch of the owner (the data came after the
	// refresh of that epoch began and before the next one did), until the
	// timer's next firing settles it into a tick (limits.lastAt) while the
	// owner's ring still remembers that next refresh; stampSettled marks
	// it so. It stamps the latest data, or the open, or SetIdleTimeout.
	last  uint64
	stall uint64 // write stall timeout in ticks, like config.idleTicks; 0 off
	pend  int    // outbound bytes pending when last looked; 0 for none
	timer packwheel.Holder
	c     gnet.Conn
}

// limits is the rest of a tracked connection's state, in its own cache
// line; see slot.
type limits struct {
	born     uint64 // tick of the open
	lastAt   uint64 // slot.last settled: the data came before the end of this tick
	since    uint64 // stamp of the latest write progress, while pend > 0
	sinceAt  uint64 // since settled
	deadline uint64 // first tick at or after the deadline; 0 for none
	// Limits in ticks, counted like config.idleTicks; 0 turns one off.
	idle, life uint64
	_          [8]byte
}

// chunkBits sets how many slots a chunk holds: 1024, in 128 KiB, which the
// Go allocator places on its own pages, so every slot is line-aligned.
const chunkBits = 10

// chunk holds the slots of 1024 descriptors, then their limits: the data
// path walks an array of one line per descriptor.
type chunk struct {
	slots [1 << chunkBits]slot
	lims  [1 << chunkBits]limits
}

// limsOffset is the distance from a slot to its limits.
const limsOffset = unsafe.Offsetof(chunk{}.lims)

// lim returns the limits of the descriptor of s, which lies in a chunk.
// O(1): they are limsOffset bytes further in the same chunk.
func (s *slot) lim() *limits {
	return (*limits)(unsafe.Add(unsafe.Pointer(s), limsOffset))
}

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
				return &ch.slots[fd&(1<<chunkBits-1)]
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
	return &d[i].slots[fd&(1<<chunkBits-1)]
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

package idleconn

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// slot is the state of one file descriptor that the data path touches, in
// one cache line, so that loops tracking neighbouring descriptors never
// write to the same line and OnTraffic reads no other: the loop that
// tracks the descriptor's connection, if any, the stamp of its latest
// data, the output pending at the last look and the connection's flags;
// and its timer. The rest of a tracked connection's state, the connection
// itself and its limits, lives in two more lines at a fixed distance in
// the same chunk (lim), read when the timer fires or a limit changes.
// TestSlotLayout guards the layout.
//
// owner is the loop that tracks the descriptor's connection, or nil. Only
// that loop's goroutine reads or writes the other fields, and the limits.
// When a descriptor is closed on one loop and reused on another, the first
// loop's Store(nil) and the second's Load (which sees it) order their
// accesses.
type slot struct {
	owner atomic.Pointer[loop]
	last  stamp // the latest data, or the open, or SetIdleTimeout
	pend  int   // output pending at the last look; 0 for none
	flags slotFlags
	index uint32 // in its chunk, for lim
	timer packwheel.Holder
	_     [8]byte
}

// slotFlags are a connection's states that the data path reads.
type slotFlags uint32

const (
	// closing: CloseAfterFlush was called; input is discarded, the
	// wrapped handler hears of no more traffic.
	closing slotFlags = 1 << iota
	// shut: closing, its output drained and its write side shut; it
	// lingers for the peer to close.
	shut
	// unwritable: found above its high-water mark, not yet drained to its
	// low one (Writable).
	unwritable
	// polled: in its loop's list of connections looked at more often
	// than once a tick (output.go).
	polled
)

// limits is the rest of a tracked connection's state: the connection,
// and each kind of limit's own, defined in the kind's file. Two lines;
// see slot.
type limits struct {
	c        gnet.Conn
	idle     uint64 // idle timeout in ticks, like config.idleTicks; 0 off
	deadline uint64 // first tick at or after the deadline; 0 for none
	life     lifetime
	stall    writeStall
	drain    drain
	output   OutputLimit
	linger   uint64 // tick the linger ends, once shut; 0 before
}

// chunkBits sets how many slots a chunk holds: 1024, in 192 KiB, which the
// Go allocator places on its own pages, so every slot is line-aligned.
const chunkBits = 10

// chunk holds the slots of 1024 descriptors, then their limits: the data
// path walks an array of one line per descriptor.
type chunk struct {
	slots [1 << chunkBits]slot
	lims  [1 << chunkBits]limits
}

// newChunk returns a chunk whose slots know their index.
func newChunk() *chunk {
	ch := new(chunk)
	for i := range ch.slots {
		ch.slots[i].index = uint32(i)
	}
	return ch
}

// limsOffset is the distance from the first slot to the first limits, and
// limsStride how much further each next limits lies than its slot.
const (
	limsOffset = unsafe.Offsetof(chunk{}.lims)
	limsStride = unsafe.Sizeof(limits{}) - unsafe.Sizeof(slot{})
)

// lim returns the limits of the descriptor of s, which lies in a chunk.
// O(1): they lie in the same chunk, at a distance set by s's index.
func (s *slot) lim() *limits {
	return (*limits)(unsafe.Add(unsafe.Pointer(s), limsOffset+uintptr(s.index)*limsStride))
}

// conn returns the connection tracked in s.
func (s *slot) conn() gnet.Conn { return s.lim().c }

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
		grown[i] = newChunk()
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

// each calls f with every slot l owns, in descriptor order, until f
// returns false. O(descriptors ever tracked by the Handler): for the rare
// passes over every connection (CloseIdle, Shutdown, Overload), not for
// the data path. It must run on l's goroutine.
func (t *fdTable) each(l *loop, f func(s *slot) bool) {
	if d := t.dir.Load(); d != nil {
		for _, ch := range *d {
			if ch == nil {
				continue
			}
			for i := range ch.slots {
				if s := &ch.slots[i]; s.owner.Load() == l && !f(s) {
					return
				}
			}
		}
	}
}

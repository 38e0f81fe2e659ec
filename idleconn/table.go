package idleconn

import (
	"sync"
	"sync/atomic"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// slot is the reaper's state for one file descriptor: the connection that
// holds it, if tracked, and that connection's timer. A slot is one cache
// line, so loops tracking neighbouring descriptors never write to the same
// line, and the data path touches nothing else.
//
// owner is the loop that tracks the descriptor's connection, or nil. Only
// that loop's goroutine reads or writes the other fields. When a descriptor
// is closed on one loop and reused on another, the first loop's Store(nil)
// and the second's Load (which sees it) order their accesses.
type slot struct {
	owner atomic.Pointer[loop]
	// last is the owner's epoch when the connection last received data:
	// the data came after the refresh of that epoch began and before the
	// next one did. It is noData until the first data.
	last  uint64
	born  uint64 // tick of the open
	timer packwheel.Holder
	c     gnet.Conn
	_     [8]byte
}

// chunkBits sets how many slots a chunk holds: 1024, 64 KiB, which the Go
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

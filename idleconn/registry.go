package idleconn

import (
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// registry maps gnet's event loops to their loop state. Lookups, made on
// each open, read an immutable snapshot through one atomic load and scan
// it: a server has a handful of loops, and comparing a few interface values
// is cheaper than hashing one. Changes, made once per loop per engine run,
// copy the snapshot under a mutex.
//
// The zero value is an empty registry that accepts new loops.
type registry struct {
	list atomic.Pointer[[]*loop]

	mu sync.Mutex
	// stopped is set from OnShutdown to OnBoot: loops that show up then
	// (connections accepted while the engine winds down) get no state.
	stopped bool
}

// find returns the state of el, or nil if it has none. Safe from any
// goroutine; it allocates nothing.
func (r *registry) find(el gnet.EventLoop) *loop {
	if p := r.list.Load(); p != nil {
		for _, l := range *p {
			if l.el == el {
				return l
			}
		}
	}
	return nil
}

// findOrAdd returns the state of el, adding one made by mk if there is none
// and the engine is running. It returns nil while the engine is stopped.
func (r *registry) findOrAdd(el gnet.EventLoop, mk func() *loop) *loop {
	if l := r.find(el); l != nil {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	var list []*loop
	if p := r.list.Load(); p != nil {
		list = *p
	}
	l := mk()
	list = append(list[:len(list):len(list)], l)
	r.list.Store(&list)
	return l
}

// all returns the current loops. The slice must not be modified.
func (r *registry) all() []*loop {
	if p := r.list.Load(); p != nil {
		return *p
	}
	return nil
}

// reset drops every loop, and with it every wheel and connection state,
// after telling each loop it has stopped; stopped says whether new loops
// may be added afterwards.
func (r *registry) reset(stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.all() {
		l.stopped.Store(true)
	}
	r.stopped = stopped
	r.list.Store(nil)
}

package packwheel

// sink delivers expired values to a function, to a slice, or nowhere.
type sink[V any] struct {
	fn      func(V)
	dst     []V
	collect bool // append to dst; otherwise call fn unless it is nil
}

func (s *sink[V]) deliver(v V) {
	switch {
	case s.fn != nil:
		s.fn(v)
	case s.collect:
		s.dst = append(s.dst, v)
	}
}

// reentry guards against Advance being called from an expiry callback,
// which would process ticks out of order under the running Advance.
type reentry bool

func (r *reentry) enter(op string) {
	if *r {
		panic(misuse("packwheel: " + op + " called from an expiry callback"))
	}
	*r = true
}

func (r *reentry) leave() { *r = false }

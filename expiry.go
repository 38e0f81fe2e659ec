package packwheel

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

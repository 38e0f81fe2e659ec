package idleconn

// Stats is a snapshot of a Handler's state, returned by Handler.Stats.
// The zero value is the state of a Handler with no engine running.
type Stats struct {
	// Loops is the number of event loops with state.
	Loops int
	// Tracked is the number of connections being tracked.
	Tracked int
	// Timers is the number of timers in the loops' wheels, as each loop
	// last published it. Once events settle it equals Tracked, less the
	// connections whose every timed limit is off, which need no timer.
	Timers int
	// Refused counts the connections refused, for MaxConns or during
	// Shutdown, since New.
	Refused uint64
	// MaxConns is the connection limit in force, Options.MaxConns or its
	// default; 0 for none.
	MaxConns int
	// IdleScale is how far Options.Overload has shortened idle timeouts:
	// 1 not at all, 0 to its Floor, as the count of open connections
	// stands.
	IdleScale float64
	// reaped counts the connections closed for each Reason, by Reason-1.
	reaped [numReasons]uint64
}

// Reaped returns how many connections the package has closed for why
// since New.
func (s Stats) Reaped(why Reason) uint64 {
	if why == 0 || int(why) > numReasons {
		return 0
	}
	return s.reaped[why-1]
}

// Stats returns a snapshot of the Handler's state. Safe from any
// goroutine; O(loops), no allocation. After the engine stops it reports
// no loops, no connections and no timers.
func (h *Handler) Stats() Stats {
	s := Stats{Refused: h.refused.Load(), MaxConns: int(h.cfg.maxConns), IdleScale: 1}
	for i := range s.reaped {
		s.reaped[i] = h.reaped[i].Load()
	}
	for _, l := range h.loops.all() {
		s.Loops++
		s.Tracked += int(l.tracked.Load())
		s.Timers += int(l.timers.Load())
	}
	if h.cfg.overload.start != 0 {
		s.IdleScale = h.cfg.overload.idleScale(h.open.Load())
	}
	return s
}

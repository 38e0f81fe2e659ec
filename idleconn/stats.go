package idleconn

// Stats is a snapshot of a Handler's reaper, returned by Handler.Stats.
// The zero value is the state of a Handler with no engine running.
type Stats struct {
	// Loops is the number of event loops with reaper state.
	Loops int
	// Tracked is the number of connections being tracked.
	Tracked int
	// Timers is the number of timers in the loops' wheels, as each loop
	// last published it. Once events settle it equals Tracked: every
	// tracked connection has exactly one timer.
	Timers int
	// ReapedIdle and ReapedLifetime count the connections the reaper has
	// closed, for each Reason, since New.
	ReapedIdle, ReapedLifetime uint64
}

// Stats returns a snapshot of the reaper's state. Safe from any goroutine;
// O(loops), no allocation. After the engine stops it reports no loops, no
// connections and no timers.
func (h *Handler) Stats() Stats {
	s := Stats{
		ReapedIdle:     h.reaped[Idle-Idle].Load(),
		ReapedLifetime: h.reaped[Lifetime-Idle].Load(),
	}
	for _, l := range h.loops.all() {
		s.Loops++
		s.Tracked += int(l.tracked.Load())
		s.Timers += int(l.timers.Load())
	}
	return s
}

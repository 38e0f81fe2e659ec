package idleconn

// Stats is a snapshot of a Handler's reaper, returned by Handler.Stats.
// The zero value is the state of a Handler with no engine running.
type Stats struct {
	// Loops is the number of event loops with reaper state.
	Loops int
	// Tracked is the number of connections being tracked.
	Tracked int
	// Timers is the number of timers in the loops' wheels, as each loop
	// last published it. Once events settle it equals Tracked, less the
	// connections whose every limit is off, which need no timer.
	Timers int
	// ReapedIdle, ReapedLifetime, ReapedDeadline and ReapedWriteStall
	// count the connections the reaper has closed for each Reason, and
	// Shed those CloseIdle closed, since New.
	ReapedIdle, ReapedLifetime, ReapedDeadline, ReapedWriteStall, Shed uint64
	// Refused counts the connections refused for MaxConns since New.
	Refused uint64
}

// Stats returns a snapshot of the reaper's state. Safe from any goroutine;
// O(loops), no allocation. After the engine stops it reports no loops, no
// connections and no timers.
func (h *Handler) Stats() Stats {
	s := Stats{
		ReapedIdle:       h.reaped[Idle-1].Load(),
		ReapedLifetime:   h.reaped[Lifetime-1].Load(),
		ReapedDeadline:   h.reaped[Deadline-1].Load(),
		ReapedWriteStall: h.reaped[WriteStall-1].Load(),
		Shed:             h.reaped[Shed-1].Load(),
		Refused:          h.refused.Load(),
	}
	for _, l := range h.loops.all() {
		s.Loops++
		s.Tracked += int(l.tracked.Load())
		s.Timers += int(l.timers.Load())
	}
	return s
}

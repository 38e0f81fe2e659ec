package idleconn

import "github.com/packwheel/packwheel"

// The drain rate: Options.MinDrainRate over Options.DrainWindow, reason
// SlowDrain. While output stays pending, the looks (output.go) add up what
// drained since the window began; a window that ends with less than its
// share drained closes the connection, one with enough begins the next.
// The window counts from a stamp and ends at a tick seen by the reaper,
// so it is never shorter than DrainWindow.

// drain is a connection's drain-rate window.
type drain struct {
	start   stamp
	drained int // bytes drained since start
}

// rollDrain begins the next window of s, as the loop stands at tick now,
// if the current one has ended with enough drained.
func (l *loop) rollDrain(s *slot, now uint64) {
	m := &s.lim().drain
	if l.cfg.drainBytes != 0 && s.pend != 0 && m.drained >= l.cfg.drainBytes &&
		l.due(m.start, l.cfg.drainTicks, now) <= now {
		*m = drain{start: l.stamp()}
	}
}

// drainDue is the drain rate's due tick: the end of the current window,
// which rollDrain moves on once enough has drained.
func drainDue(l *loop, s *slot, now uint64) uint64 {
	if l.cfg.drainBytes == 0 || s.pend == 0 {
		return packwheel.MaxTick
	}
	return l.due(s.lim().drain.start, l.cfg.drainTicks, now)
}

package idleconn

import (
	"fmt"
	"time"
)

// The connection limit: Options.MaxConns, counted in Stats.Refused (no
// Reason: a refused connection was never tracked), and Options.Overload,
// which shortens idle timeouts as the count nears the limit.

// DefaultMaxConns returns Options.MaxConns's default: the process's limit
// on open descriptors (RLIMIT_NOFILE, which Go raises to its hard limit at
// start-up), less an eighth of it, at most 64, for the descriptors a
// server holds besides its connections, less a burst of connections
// accepted before an event loop can refuse them: a quarter of the limit,
// at most 4096, the default listen backlog of Linux (net.core.somaxconn).
// For a limit of 20,000 it is 15,840; for 1,024, 704. Where the limit
// cannot be read it returns 0, no limit. O(1), one system call.
func DefaultMaxConns() int {
	n := openFilesLimit()
	if n <= 0 {
		return 0
	}
	return max(n-min(n/8, 64)-min(n/4, 4096), 1)
}

// admit counts c's open against MaxConns, and reports whether the server
// may hold it: not beyond MaxConns, nor once Shutdown has begun.
func (h *Handler) admit() bool {
	open := h.open.Add(1)
	if (open > h.cfg.maxConns && h.cfg.maxConns > 0) || h.shutting.Load() {
		h.open.Add(-1)
		h.refused.Add(1)
		return false
	}
	return true
}

// overloadConfig is Options.Overload in connections and ticks.
type overloadConfig struct {
	start      int64   // open connections from which idle timeouts shrink; 0 off
	span       float64 // maxConns - start
	floorTicks uint64
}

// newOverload validates o against the other options and converts it.
func newOverload(o Overload, maxConns int64, timeout, res, tick time.Duration) (overloadConfig, error) {
	if o == (Overload{}) {
		return overloadConfig{}, nil
	}
	switch {
	case maxConns <= 0:
		return overloadConfig{}, fmt.Errorf("idleconn: Overload needs a MaxConns limit")
	case !(o.Start > 0 && o.Start < 1):
		return overloadConfig{}, fmt.Errorf("idleconn: Overload.Start %v must lie strictly between 0 and 1", o.Start)
	case o.Floor < res || o.Floor > timeout:
		return overloadConfig{}, fmt.Errorf("idleconn: Overload.Floor %v must lie between Resolution (%v) and Timeout (%v)", o.Floor, res, timeout)
	}
	start := min(max(int64(o.Start*float64(maxConns)), 1), maxConns-1)
	return overloadConfig{start: start, span: float64(maxConns - start), floorTicks: limitTicks(o.Floor, tick)}, nil
}

// idleScale returns how far idle timeouts are shrunk with open
// connections: 1 not at all, 0 to the floor.
func (c *overloadConfig) idleScale(open int64) float64 {
	if c.start == 0 || open <= c.start {
		return 1
	}
	return max(1-float64(open-c.start)/c.span, 0)
}

// overloadedIdle returns an idle timeout of ticks, shrunk by the loop's
// current scale toward the floor.
func (l *loop) overloadedIdle(ticks uint64) uint64 {
	floor := l.cfg.overload.floorTicks
	if l.idleScale == 1 || ticks <= floor {
		return ticks
	}
	return floor + uint64(l.idleScale*float64(ticks-floor))
}

// overload takes the current scale at tick now and, when it has shrunk
// by a step since the loop's last pass, closes the connections already
// idle for their shortened timeout and brings the others' timers
// forward: each connection's timer was armed for its timeout as it was.
// The pass is O(descriptors); a step of 1/64 bounds how often it runs as
// the server fills.
func (l *loop) overload(now uint64) {
	if l.cfg.overload.start == 0 {
		return
	}
	l.idleScale = l.cfg.overload.idleScale(l.h.open.Load())
	if l.idleScale >= l.scanScale {
		l.scanScale = l.idleScale // timers armed too early re-arm
		return
	}
	if l.scanScale-l.idleScale < 1.0/64 && l.idleScale > 0 {
		return
	}
	l.scanScale = l.idleScale
	l.h.table.each(l, func(s *slot) bool {
		if due, why := l.dueOf(s, now); due <= now {
			l.reap(s, why)
		} else {
			l.arm(s, due, now)
		}
		return !l.stopped.Load()
	})
}

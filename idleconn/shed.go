package idleconn

import (
	"context"
	"time"
)

// Shedding: closing the connections that are between requests, for load
// shedding (CloseIdle, reason Shed) and graceful shutdown (Shutdown,
// reasons Shed and, at its context's end, Shutdown). A connection is
// between requests when its idle timeout is on, no deadline is set, no
// output is pending and it is not closing: an application that reads or
// answers a request turns its idle timeout off or sets a deadline
// (SetIdleTimeout, SetDeadline), which marks the connection busy.

// CloseIdle closes, on each event loop, every tracked connection between
// requests that has been idle for at least d: one that has received
// nothing for d (counted like the idle timeout, so from SetIdleTimeout
// too, and known to within Resolution: one idle for less than
// d+Resolution may be spared). CloseIdle(0) closes every connection
// between requests; a larger d sheds load. Safe from any goroutine: it
// only asks each loop, through EventLoop.Execute, and returns before the
// loops have run it; calls that come before a loop runs merge, the latest
// d winning. The closes are counted as Shed. Each loop scans the
// descriptor table: O(descriptors). It panics, with a message starting
// "idleconn: ", if d is negative.
func (h *Handler) CloseIdle(d time.Duration) {
	if d < 0 {
		panic("idleconn: CloseIdle: negative duration " + d.String())
	}
	for _, l := range h.loops.all() {
		l.shedFor.Store(int64(d))
		l.dispatch()
	}
}

// Shutdown shuts the server's connections down gracefully, as
// net/http's Server.Shutdown does: from its call, connections opened are
// refused (OnRefuse may answer them), and each loop closes its
// connections between requests, at once and then each tick as others
// finish their requests; ShuttingDown tells handlers to close after their
// current answer (CloseAfterFlush). When ctx ends, every connection still
// open is closed, reason Shutdown, and Shutdown returns ctx's error
// without waiting for the loops; otherwise it returns nil once every
// connection has closed. Stop the engine (gnet.Engine.Stop) after it.
// Safe from any goroutine; it polls the open count every few
// milliseconds. Shutdown lasts until OnShutdown: a Handler then serves
// its next engine afresh.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.shutting.Store(true)
	for _, l := range h.loops.all() {
		l.dispatch()
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for h.open.Load() > 0 {
		select {
		case <-ctx.Done():
			h.closeAll.Store(true)
			for _, l := range h.loops.all() {
				l.dispatch()
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// ShuttingDown reports whether Shutdown has begun: a keep-alive server
// then answers the request in hand with its connection's close (HTTP's
// "Connection: close" and CloseAfterFlush), so that no new request is
// lost to the close. Safe from any goroutine; O(1).
func (h *Handler) ShuttingDown() bool { return h.shutting.Load() }

// shed runs on the loop at tick now: it takes what CloseIdle asked for,
// Shutdown's pass over the connections between requests, and the close of
// every connection once Shutdown's context has ended.
func (l *loop) shed(now uint64) {
	d := time.Duration(l.shedFor.Swap(-1))
	all, shutting := l.h.closeAll.Load(), l.h.shutting.Load()
	switch {
	case d < 0 && !shutting:
		return
	case d < 0 && !all && now == l.shedAt:
		return // Shutdown's pass runs once a tick, not at every poll
	case shutting:
		d = 0
	}
	l.shedAt = now
	ticks := limitTicks(d, l.cfg.tick)
	l.h.table.each(l, func(s *slot) bool {
		switch {
		case all:
			l.reap(s, Shutdown)
		case l.betweenRequests(s) && (ticks == 0 || l.due(s.last, ticks, now) <= now):
			l.reap(s, Shed)
		}
		return !l.stopped.Load()
	})
}

// betweenRequests reports whether s's connection is between requests.
func (l *loop) betweenRequests(s *slot) bool {
	m := s.lim()
	return m.idle != 0 && m.deadline == 0 && s.flags&closing == 0 && m.c.OutboundBuffered() == 0
}

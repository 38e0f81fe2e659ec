package idleconn

import (
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Pending output: what gnet holds in a connection's outbound buffer
// because the peer has not read it yet. The package looks at it
// (OutboundBuffered) on the data path before the wrapped handler, if some
// was pending, and after, if some is; before and after a Timer's function;
// each tick while some is pending, when the connection's timer fires; and,
// while a connection is not writable or is closing with output left, at
// polls that begin a millisecond after and back off to the tick. Each look
// feeds the limits on output: OutputLimit's Max (reason OutputFull) and
// water marks (Writable, OnWritable), the write stall (stall.go), the
// drain rate (drain.go) and the lingering close (linger.go).

// Writable reports whether c may take more output: false once its pending
// output has exceeded its high-water mark, until it has drained to its low
// one, when Options.OnWritable is called. A handler that answers pipelined
// requests stops while it is false, so that a peer that does not read
// cannot make it buffer without end. It must be called on c's loop, from a
// handler callback or a runnable; for a connection not tracked it compares
// the pending output with Options.Output's High. O(1), no allocation.
func (h *Handler) Writable(c gnet.Conn) bool {
	p := c.OutboundBuffered()
	s, l := h.tracking(c)
	if s == nil {
		return p <= h.cfg.output.High
	}
	l.look(s, p, l.lastTick(), true) // a Max exceeded closes c at the next run
	return s.flags&unwritable == 0
}

// SetOutputLimit sets c's output limit in place of Options.Output; the
// zero OutputLimit restores the Handler's. A connection already above the
// new Max is closed at the loop's next run. It panics, with a message
// starting "idleconn: ", if o is neither zero nor a valid limit, before
// changing anything. It must be called on c's loop: from a handler callback for c,
// or a runnable given to c.EventLoop().Execute. It reports whether c is
// tracked; false means it did nothing, c being untracked, refused, or
// closed with its descriptor reused since. O(1), at most one clock read,
// no allocation.
func (h *Handler) SetOutputLimit(c gnet.Conn, o OutputLimit) bool {
	if o == (OutputLimit{}) {
		o = h.cfg.output
	} else if err := o.check("SetOutputLimit:"); err != nil {
		panic(err.Error())
	}
	s, l := h.tracking(c)
	if s == nil {
		return false
	}
	s.lim().output = o
	l.look(s, c.OutboundBuffered(), l.lastTick(), true)
	return true
}

// observe is look, followed by OnWritable if the look found c drained to
// its low-water mark.
func (l *loop) observe(s *slot, p int, now uint64, after bool) Reason {
	was := s.flags & unwritable
	why := l.look(s, p, now, after)
	if why == 0 && was != 0 && s.flags&(unwritable|closing) == 0 {
		if f := l.cfg.onWritable; f != nil {
			f(s.conn())
		}
	}
	return why
}

// look takes p as the output now pending on s's connection, as the loop
// stands at tick now, and reports OutputFull if it exceeds the
// connection's Max, or 0. after says that the package saw the writes that
// may have come since the last look (a handler callback or a Timer's
// function ran since), so that growth is expected; growth at any other
// look comes from a write the package did not see.
func (l *loop) look(s *slot, p int, now uint64, after bool) Reason {
	m := s.lim()
	if p > m.output.Max {
		return OutputFull
	}
	prev := s.pend
	s.pend = p
	switch {
	case p < prev:
		// Progress: the peer read, which counts as activity for the idle
		// timeout as data received does, so that a long answer to a
		// peer that reads is not cut.
		st := l.stamp()
		s.last, m.stall.since = st, st
		m.drain.drained += prev - p
	case p == 0:
	case prev == 0: // pending from now
		st := l.stamp()
		m.stall.since, m.drain = st, drain{start: st}
	case p > prev && !after:
		// Grown by a write the package did not see, which hides how much
		// drained: the drain rate counts afresh, never early. The stall
		// goes on: some may have drained, but the peer that stopped
		// reading while the server writes from elsewhere must not escape.
		m.drain = drain{start: l.stamp()}
	}
	l.rollDrain(s, now)
	switch {
	case p > m.output.High:
		if s.flags&unwritable == 0 {
			s.flags |= unwritable
			l.startPoll(s)
		}
	case p <= m.output.Low:
		s.flags &^= unwritable
	}
	if s.flags&(closing|shut) == closing {
		if p == 0 {
			l.shutWrite(s, now)
		} else {
			l.startPoll(s)
		}
	}
	if p != 0 {
		l.arm(s, now+1, now) // and each tick while output is pending
	}
	return 0
}

// Polls look at a connection's output more often than its timer does, so
// that a handler waiting for OnWritable, or a lingering close waiting to
// shut the write side, hears of a fast peer's drain within a millisecond
// or two rather than a tick: a peer that reads at memory speed would
// otherwise idle for most of each tick. A poll backs off, doubling its
// gap, so that a slow peer costs about as much as the tick's look, which
// takes over once the gap reaches a tick.
const pollFirst = time.Millisecond

// noPoll is loop.pollAt's value when no poll is due.
const noPoll = 1<<63 - 1

// poll is a connection in its loop's poll list: when it is due, in
// nanoseconds after the clock's origin, and its gap since the last.
type poll struct {
	s       *slot
	at, gap time.Duration
}

// startPoll puts s in the loop's poll list, unless it is there already
// or the tick is finer than a poll.
func (l *loop) startPoll(s *slot) {
	if s.flags&polled != 0 || l.cfg.tick <= pollFirst {
		return
	}
	s.flags |= polled
	at := l.h.sinceOrigin(l.h.now()) + pollFirst
	l.polls = append(l.polls, poll{s: s, at: at, gap: pollFirst})
	if int64(at) < l.pollAt.Load() {
		l.pollAt.Store(int64(at))
		l.h.nudge()
	}
}

// runPolls looks at the polled connections that are due at t, nanoseconds
// after the clock's origin, and tick now; it drops those whose writability
// or lingering close is settled, or whose gap has reached a tick.
func (l *loop) runPolls(t time.Duration, now uint64) {
	if len(l.polls) == 0 || int64(t) < l.pollAt.Load() {
		return
	}
	next := time.Duration(noPoll)
	kept := l.polls[:0]
	for _, p := range l.polls {
		s := p.s
		if s.owner.Load() != l || s.flags&polled == 0 {
			continue // released, and maybe taken by another loop
		}
		if p.at <= t {
			c := s.conn()
			if why := l.observe(s, c.OutboundBuffered(), now, false); why != 0 {
				l.reap(s, why)
				continue
			}
			if s.owner.Load() != l || s.conn() != c {
				continue
			}
			p.gap *= 2
			p.at = t + p.gap
			if s.flags&unwritable == 0 && s.flags&(closing|shut) != closing || p.gap >= l.cfg.tick {
				s.flags &^= polled
				continue
			}
		}
		next = min(next, p.at)
		kept = append(kept, p)
	}
	clear(l.polls[len(kept):])
	l.polls = kept
	l.pollAt.Store(int64(next))
	if next != noPoll {
		l.h.nudge() // the driver sleeps until the next poll too
	}
}

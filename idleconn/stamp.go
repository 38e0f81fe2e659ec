package idleconn

import "math"

// A stamp says when an event happened without reading the clock: the data
// path records the loop's epoch, which counts the refreshes that saw the
// clock at a new tick (loop.ring holds each recent epoch's tick). An event
// stamped with epoch e came after the refresh of e began and before the
// refresh of e+1 did, so before the end of that refresh's tick. A limit
// counted from it is due that many ticks after that end: late by up to a
// tick, never early. Once e+1 has begun, settle turns the stamp into that
// tick, so that it no longer depends on the ring, which forgets old
// epochs.
type stamp struct {
	epoch uint64 // stampSettled once settled into at
	at    uint64 // the tick before whose end the event came, once settled
}

// stampSettled is the epoch of a stamp settled into a tick.
const stampSettled = math.MaxUint64

// settledAt returns a stamp for an event before the end of tick t.
func settledAt(t uint64) stamp { return stamp{epoch: stampSettled, at: t} }

// stamp returns a stamp for an event happening now, and makes sure a
// refresh will end the epoch.
func (l *loop) stamp() stamp { return stamp{epoch: l.stampNow()} }

// stampNow returns the current epoch, to stamp an event happening now,
// and makes sure a refresh will end it.
func (l *loop) stampNow() uint64 {
	if !l.busy.Load() {
		l.markBusy()
	}
	return l.epoch
}

// markBusy records that the current epoch holds a stamp and wakes the
// driver, which refreshes the loop at the next tick.
func (l *loop) markBusy() {
	l.busy.Store(true)
	l.h.nudge()
}

// due returns the tick at which a limit of ticks counted from the event
// st stamps is reached, as the loop stands at tick now.
//
// An event stamped with the current epoch came after the latest refresh:
// its limit is estimated from the next tick and checked again when the
// timer fires. A stamp older than the ring counts from the oldest refresh
// remembered, which is later than the truth: late, never early. arm's
// horizon keeps stamps from growing that old before expire settles them.
func (l *loop) due(st stamp, ticks, now uint64) uint64 {
	switch {
	case st.epoch == stampSettled:
		return st.at + ticks
	case st.epoch >= l.epoch:
		return now + 1 + ticks
	}
	return l.endOf(st.epoch) + ticks
}

// endOf returns the tick of the refresh that ended epoch e, an epoch
// before the current one; for one older than the ring, the oldest refresh
// remembered.
func (l *loop) endOf(e uint64) uint64 {
	next := e + 1
	if oldest := l.epoch - l.mask; l.epoch >= l.mask && next < oldest {
		next = oldest
	}
	return l.ring[next&l.mask]
}

// settle turns *st into a tick once its epoch has ended.
func (l *loop) settle(st *stamp) {
	if st.epoch != stampSettled && st.epoch < l.epoch {
		*st = settledAt(l.endOf(st.epoch))
	}
}

package idleconn

import (
	"fmt"
	"sync/atomic"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
)

// loop is the package's state for one gnet event loop. Everything but el,
// which never changes, and the atomics belongs to that loop's goroutine:
// handler callbacks and the runnable (reaper.go), which gnet runs there.
type loop struct {
	el  gnet.EventLoop
	h   *Handler
	cfg *config

	// epoch counts the refreshes that saw the clock at a new tick; ring
	// holds the tick of each recent epoch, at index epoch&mask (see
	// stamp). busy is set once an event has been stamped with the current
	// epoch, which needs a refresh at a later tick to end it; the refresh
	// clears it. The data path reads both, so they sit together.
	epoch uint64
	busy  atomic.Bool
	ring  []uint64
	mask  uint64

	wheel packwheel.Timers[*slot]
	batch []*slot
	// tw holds the loop's Timers, armed by the application for any time
	// ahead, so a hierarchical wheel, whose buckets cover any deadline.
	tw      packwheel.Wheel[*Timer]
	twBatch []*Timer
	// polls are the connections whose output is looked at more often than
	// once a tick (output.go).
	polls []poll

	// refusing is the connection OnOpen is refusing, from its OnOpen to
	// its OnClose, which gnet calls at once.
	refusing gnet.Conn
	// shedAt is the tick of the latest pass shed made.
	shedAt uint64
	// idleScale is Stats.IdleScale as of the loop's latest run, and
	// scanScale the scale its latest pass over its connections used
	// (overload.go).
	idleScale, scanScale float64

	// next is the earliest tick at which the wheel has work, as the loop
	// last published it, packwheel.MaxTick for none; refreshed is the tick
	// of the latest refresh; pollAt is when the earliest poll is due, in
	// nanoseconds after the clock's origin, or noPoll. The driver reads
	// them.
	next      atomic.Uint64
	refreshed atomic.Uint64
	pollAt    atomic.Int64
	// shedFor is the idle time CloseIdle asked for, in nanoseconds, until
	// the runnable takes it; -1 for none.
	shedFor atomic.Int64
	// pending is set while the runnable is queued on the loop, so that a
	// loop that falls behind gets one run, not one per tick.
	pending atomic.Bool
	// stopped is set when the engine shuts down. gnet calls OnShutdown on
	// its own goroutine while the loops still run, so a run of the
	// runnable may overlap it: after stopped, OnClose may find the
	// descriptor table already dropped.
	stopped atomic.Bool
	tracked atomic.Int64 // connections tracked
	timers  atomic.Int64 // the wheel's Len as of the loop's latest change
}

func newLoop(h *Handler, el gnet.EventLoop) *loop {
	l := &loop{
		el:    el,
		h:     h,
		cfg:   &h.cfg,
		ring:  make([]uint64, h.cfg.ringSize),
		mask:  uint64(h.cfg.ringSize - 1),
		batch: make([]*slot, 0, reapBatch),
		// Made here so that firing timers never allocates.
		twBatch:   make([]*Timer, 0, reapBatch),
		idleScale: 1,
		scanScale: 1,
	}
	if h.cfg.wheel == Hierarchical {
		l.wheel = new(packwheel.Wheel[*slot])
	} else {
		l.wheel = packwheel.NewHashed[*slot](packwheel.HashedOptions{Slots: h.cfg.slots})
	}
	l.next.Store(packwheel.MaxTick)
	l.pollAt.Store(noPoll)
	l.shedFor.Store(-1)
	return l
}

// lastTick returns the tick of the loop's latest refresh: now, or a
// little before, seen from the data path, which reads no clock.
func (l *loop) lastTick() uint64 { return l.ring[l.epoch&l.mask] }

// track starts tracking c, opened at tick now, in its descriptor's slot s.
func (l *loop) track(c gnet.Conn, s *slot, now uint64) {
	if s.owner.Load() != nil {
		// gnet calls OnClose before it closes a descriptor, so a tracked
		// one is reused only if a handler wrapping this one kept OnClose
		// from it. The slot's timer may sit in another loop's wheel, which
		// only that loop may touch, and every later close would leak the
		// same way: stop here, before anything changes.
		panic(fmt.Sprintf("idleconn: descriptor %d opened again while still tracked: "+
			"a handler wrapping idleconn.Handler must pass OnClose on", c.Fd()))
	}
	// The open came before the end of tick now: idle since then.
	s.last, s.pend, s.flags = settledAt(now), 0, 0
	*s.lim() = limits{
		c:      c,
		idle:   l.cfg.idleTicks,
		life:   lifetime{born: now, ticks: l.cfg.lifeTicks},
		stall:  writeStall{ticks: l.cfg.stallTicks},
		output: l.cfg.output,
	}
	due, _ := l.dueOf(s, now)
	l.arm(s, due, now)
	s.owner.Store(l)
	l.tracked.Add(1)
}

// release stops tracking the connection in s, which this loop owns.
func (l *loop) release(s *slot) {
	l.wheel.Cancel(&s.timer)
	s.lim().c = nil
	s.flags = 0 // its poll, if any, is dropped at the next run
	s.owner.Store(nil)
	l.tracked.Add(-1)
	l.timers.Store(int64(l.wheel.Len()))
}

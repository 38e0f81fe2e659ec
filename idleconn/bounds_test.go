package idleconn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fake-clock tests of the bounds on memory and of the ways to close:
// output (Max, water marks), input, drain rate, lingering close, graceful
// shutdown and overload. limitOpts' tick is 5ms, so polls (from 1ms) run
// between ticks.

// writer is a wrapped handler whose OnTraffic writes add bytes that stay
// pending, consumes take bytes of input, and counts its calls.
type writer struct {
	gnet.BuiltinEventEngine
	add, take int32
	calls     int
}

func (w *writer) OnTraffic(c gnet.Conn) gnet.Action {
	w.calls++
	fc := c.(*fakeConn)
	fc.out += w.add
	fc.in -= min(w.take, fc.in)
	return gnet.None
}

// traffic delivers data to c as gnet does: OnTraffic, then the close it
// asks for.
func (f *fakeServer) traffic(c *fakeConn) gnet.Action {
	action := f.h.OnTraffic(c)
	if action == gnet.Close {
		_ = c.loop.Close(c)
	}
	return action
}

// runFor advances f's clock by d in quarter-tick steps, waking the driver
// and running l's runnables at each, calling each (if not nil) first.
func (f *fakeServer) runFor(l *fakeLoop, d time.Duration, each func(elapsed time.Duration)) {
	start := f.clk.t
	step := f.h.cfg.tick / 4
	for f.clk.t.Sub(start) < d {
		f.clk.t = f.clk.t.Add(step)
		if each != nil {
			each(f.clk.t.Sub(start))
		}
		f.h.wake(f.clk.t)
		l.runQueued()
	}
}

// TestOutputFull checks that output pending beyond Max closes the
// connection, reason OutputFull, wherever the package looks: on the data
// path after the handler wrote, before it (a write made elsewhere), when
// the timer fires while output is pending, and per connection.
func TestOutputFull(t *testing.T) {
	opts := limitOpts
	opts.Output = OutputLimit{Max: 1000, High: 500, Low: 100}
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()

	c := openFake(f.h, l, 3)
	w.add = 1000
	require.Equal(t, gnet.None, f.traffic(c), "at Max: kept")
	w.add = 1
	require.Equal(t, gnet.Close, f.traffic(c), "the handler's write passes Max")
	require.Equal(t, []Reason{OutputFull}, f.reap)

	// A write from elsewhere, seen before the handler runs.
	w.add = 0
	c = openFake(f.h, l, 3)
	c.out = 10
	f.traffic(c)
	c.out = 2000
	require.Equal(t, gnet.Close, f.traffic(c))
	require.Equal(t, 3, w.calls, "the handler is not called for a connection over Max")

	// And seen by the timer, which looks each tick while output is pending.
	c = openFake(f.h, l, 3)
	c.out = 10
	f.traffic(c)
	c.out = 1001
	got := f.closeAfter(c, l, time.Second, nil)
	require.Positive(t, got)
	require.LessOrEqual(t, got, f.h.cfg.tick+f.h.cfg.tick/4, "within a tick")
	require.Equal(t, []Reason{OutputFull, OutputFull, OutputFull}, f.reap)

	// Per connection.
	c = openFake(f.h, l, 3)
	require.True(t, f.h.SetOutputLimit(c, OutputLimit{Max: 5000, High: 4000, Low: 10}))
	w.add = 4500
	require.Equal(t, gnet.None, f.traffic(c))
	require.True(t, f.h.SetOutputLimit(c, OutputLimit{}), "back to the Handler's")
	require.Equal(t, gnet.Close, f.traffic(c))
	require.Equal(t, 4, int(f.h.Stats().Reaped(OutputFull)))
}

// TestOutputFullUnseen checks that output found above Max outside the
// data path, by Writable or by SetOutputLimit lowering Max, grown by a
// write the package never saw, closes the connection, OutputFull, at the
// loop's next run, with and without the budget.
func TestOutputFullUnseen(t *testing.T) {
	for _, budget := range []int64{-1, 1 << 30} {
		opts := limitOpts
		opts.Output, opts.Budget = OutputLimit{Max: 1000, High: 500, Low: 100}, budget
		f := newFakeServer(t, &writer{}, opts)
		l := f.loop()

		c := openFake(f.h, l, 3)
		c.out = 2000 // an AsyncWrite, say
		require.False(t, f.h.Writable(c))
		require.LessOrEqual(t, f.closeAfter(c, l, time.Second, nil), f.h.cfg.tick+f.h.cfg.tick/4, "budget %d: Writable", budget)

		c = openFake(f.h, l, 4)
		c.out = 800
		require.True(t, f.h.SetOutputLimit(c, OutputLimit{Max: 600, High: 500, Low: 100}))
		require.LessOrEqual(t, f.closeAfter(c, l, time.Second, nil), f.h.cfg.tick+f.h.cfg.tick/4, "budget %d: SetOutputLimit", budget)
		require.Equal(t, []Reason{OutputFull, OutputFull}, f.reap, "budget %d", budget)
		checkBudget(t, f.h)
	}
}

// TestWritable checks the water marks: Writable turns false above High
// and true again at Low, and OnWritable is called once per such period,
// within two polls of the drain, unless Writable told the handler first.
func TestWritable(t *testing.T) {
	opts := limitOpts
	opts.Output = OutputLimit{Max: 1 << 20, High: 1000, Low: 200}
	var writable []time.Time // when OnWritable was called
	var f *fakeServer
	opts.OnWritable = func(gnet.Conn) { writable = append(writable, f.clk.t) }
	w := &writer{}
	f = newFakeServer(t, w, opts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	require.True(t, f.h.Writable(c))

	w.add = 1500
	f.traffic(c)
	require.False(t, f.h.Writable(c), "above High")
	c.out = 500
	require.False(t, f.h.Writable(c), "drained, not yet to Low")
	c.out = 200
	require.True(t, f.h.Writable(c), "at Low")
	require.Empty(t, writable, "Writable said so: no call")

	// Drained with no traffic: a poll sees it and calls OnWritable.
	c.out = 0
	f.traffic(c) // writes 1500 again
	require.False(t, f.h.Writable(c))
	var drained time.Time
	f.runFor(l, 50*time.Millisecond, func(elapsed time.Duration) {
		if elapsed >= 3*time.Millisecond && drained.IsZero() {
			c.out, drained = 100, f.clk.t
		}
	})
	require.Len(t, writable, 1)
	assert.LessOrEqual(t, writable[0].Sub(drained), 2*pollFirst+f.h.cfg.tick/4, "within two polls")
	require.True(t, f.h.Writable(c))

	// A slow drain: polls back off to the tick, which still sees it.
	w.add = 2000
	f.traffic(c)
	f.runFor(l, 200*time.Millisecond, nil)
	require.Len(t, writable, 1)
	require.Empty(t, f.h.loops.all()[0].polls, "polls stop at the tick")
	c.out = 0
	f.runFor(l, f.h.cfg.tick+f.h.cfg.tick/4, nil)
	require.Len(t, writable, 2, "the tick's look")

	// Drained by the time data comes: OnWritable before the handler.
	w.add = 2000
	f.traffic(c)
	c.out, w.add = 0, 0
	calls := w.calls
	f.traffic(c)
	require.Len(t, writable, 3)
	require.Equal(t, calls+1, w.calls)

	// OnWritable that untracks the connection: the data that came is
	// still the wrapped handler's.
	w.add = 2000
	f.traffic(c)
	c.out, w.add = 0, 0
	untrack := f.h.cfg.onWritable
	f.h.cfg.onWritable = func(c gnet.Conn) { f.h.Untrack(c) }
	calls = w.calls
	f.traffic(c)
	require.Equal(t, calls+1, w.calls)
	require.Nil(t, f.slot(c))
	f.h.cfg.onWritable = untrack

	// A connection not tracked is compared with the Handler's High.
	require.NoError(t, l.Close(c))
	c.out = 1001
	require.False(t, f.h.Writable(c))
	require.False(t, f.h.SetOutputLimit(c, OutputLimit{Max: 1, High: 1, Low: 1}))
}

// TestInputFull checks that unconsumed input beyond MaxInput closes the
// connection after the handler ran, reason InputFull, and its default.
func TestInputFull(t *testing.T) {
	opts := limitOpts
	opts.MaxInput = 1000
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	c.in = 1000
	require.Equal(t, gnet.None, f.traffic(c), "at MaxInput: kept")
	c.in, w.take = 5000, 4000
	require.Equal(t, gnet.None, f.traffic(c), "consumed down to MaxInput")
	c.in, w.take = 1001, 0
	require.Equal(t, gnet.Close, f.traffic(c))
	require.Equal(t, []Reason{InputFull}, f.reap)

	g := newFakeServer(t, w, limitOpts)
	require.Equal(t, DefaultMaxInput, g.h.cfg.maxInput)
}

// TestDrainRate checks MinDrainRate: a connection draining below the
// rate is closed at the end of a window, never before a whole window has
// passed and at most Resolution after; one draining at the rate never is;
// growth the package did not see restarts the window.
func TestDrainRate(t *testing.T) {
	opts := limitOpts
	opts.MinDrainRate, opts.DrainWindow = 1000, 100*time.Millisecond // 100 bytes a window
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()

	// Half the rate: 25 bytes every 50ms, from the write on.
	c := openFake(f.h, l, 3)
	w.add = 100_000
	f.traffic(c)
	got := f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		if elapsed%(50*time.Millisecond) == 0 {
			c.out -= 25
		}
	})
	requireWithin(t, f.h, got, opts.DrainWindow, "slow drain")
	require.Equal(t, []Reason{SlowDrain}, f.reap)

	// At the rate: 10 bytes every 10ms, for a second.
	c = openFake(f.h, l, 3)
	f.traffic(c)
	got = f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		if elapsed%(10*time.Millisecond) == 0 {
			c.out -= 10
		}
	})
	require.Equal(t, -time.Duration(1), got, "at the rate")
	require.NoError(t, l.Close(c))

	// Slow, but the output grows from elsewhere every 80ms from 40ms on:
	// each growth hides what drained, so the window starts again.
	c = openFake(f.h, l, 4)
	f.traffic(c)
	got = f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		switch {
		case elapsed%(80*time.Millisecond) == 40*time.Millisecond:
			c.out += 1000
		case elapsed%(30*time.Millisecond) == 0:
			c.out -= 1
		}
	})
	require.Equal(t, -time.Duration(1), got, "growth unseen restarts the window: %v", f.reap)

	// Emptied: no window while nothing is pending.
	c.out, w.add = 0, 0
	require.Equal(t, -time.Duration(1), f.closeAfter(c, l, 500*time.Millisecond, f.every(c, 50*time.Millisecond)))
	require.Equal(t, []Reason{SlowDrain}, f.reap)
}

// TestIdleCountsOutputRead checks that a peer reading pending output is
// active for the idle timeout, though it sends nothing.
func TestIdleCountsOutputRead(t *testing.T) {
	w := &writer{add: 10_000}
	f := newFakeServer(t, w, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	l := f.loop()
	c := openFake(f.h, l, 3)
	f.traffic(c)
	got := f.closeAfter(c, l, 500*time.Millisecond, func(elapsed time.Duration) {
		if elapsed%(50*time.Millisecond) == 0 {
			c.out -= 100
		}
	})
	require.Equal(t, -time.Duration(1), got, "reading")
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, nil), 100*time.Millisecond, "stopped reading")
	require.Equal(t, []Reason{Idle}, f.reap)
}

// shutdowns records the write sides a fake server shut.
func (f *fakeServer) recordShutdowns(fail bool) *[]int {
	var fds []int
	f.h.shutdownWrite = func(fd int) error {
		fds = append(fds, fd)
		if fail {
			return errors.New("not connected")
		}
		return nil
	}
	return &fds
}

// TestCloseAfterFlush checks the lingering close: the wrapped handler
// hears no more traffic, input is discarded, the write side is shut once
// the output has drained (within two polls), and the connection closes
// when its peer does, or at Linger, or when its output stalls.
func TestCloseAfterFlush(t *testing.T) {
	opts := limitOpts
	opts.Linger = 200 * time.Millisecond
	w := &writer{}
	f := newFakeServer(t, w, opts)
	shut := f.recordShutdowns(false)
	l := f.loop()

	// Output pending, drained by a peer that then closes.
	c := openFake(f.h, l, 3)
	w.add = 5000
	f.traffic(c)
	require.True(t, f.h.CloseAfterFlush(c))
	require.True(t, f.h.CloseAfterFlush(c), "twice is once")
	calls := w.calls
	c.in = 300
	require.Equal(t, gnet.None, f.traffic(c))
	require.Equal(t, calls, w.calls, "the handler hears nothing more")
	require.Zero(t, c.in, "input is discarded")
	var drained time.Time
	f.runFor(l, 30*time.Millisecond, func(elapsed time.Duration) {
		if elapsed >= 10*time.Millisecond && drained.IsZero() {
			c.out, drained = 0, f.clk.t
		}
	})
	require.Equal(t, []int{3}, *shut)
	require.True(t, c.open, "lingering")
	require.NoError(t, l.Close(c)) // the peer read the end and closed
	f.runFor(l, time.Second, nil)
	require.Empty(t, f.reap)

	// Nothing pending: shut at once; a peer that never closes goes at
	// Linger.
	c = openFake(f.h, l, 4)
	require.True(t, f.h.CloseAfterFlush(c))
	require.Equal(t, []int{3, 4}, *shut)
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, nil), opts.Linger, "linger")
	require.Equal(t, []Reason{Linger}, f.reap)

	// Output that never drains: bounded by the idle timeout (1s) as a
	// stall timeout, since WriteStallTimeout is off.
	c = openFake(f.h, l, 5)
	w.add = 100
	f.traffic(c)
	require.True(t, f.h.CloseAfterFlush(c))
	requireWithin(t, f.h, f.closeAfter(c, l, 2*time.Second, f.every(c, 10*time.Millisecond)), time.Second, "stalled flush")
	require.Equal(t, []Reason{Linger, WriteStall}, f.reap)
	require.Equal(t, []int{3, 4}, *shut)

	// A write side that cannot be shut: closed at the next run.
	g := newFakeServer(t, &writer{}, opts)
	g.recordShutdowns(true)
	gl := g.loop()
	c = openFake(g.h, gl, 3)
	require.True(t, g.h.CloseAfterFlush(c))
	got := g.closeAfter(c, gl, time.Second, nil)
	require.LessOrEqual(t, got, g.h.cfg.tick+g.h.cfg.tick/4)
	require.Equal(t, []Reason{Linger}, g.reap)
	require.False(t, g.h.CloseAfterFlush(c), "not tracked")
}

// TestOnWritableClosesAfterFlush checks CloseAfterFlush's promise when
// OnWritable calls it: OnTraffic's look before the wrapped handler finds
// the output drained and calls OnWritable, which ends the connection;
// the data that came is discarded, and the wrapped handler is not called.
func TestOnWritableClosesAfterFlush(t *testing.T) {
	opts := limitOpts
	opts.Output = OutputLimit{Max: 1 << 20, High: 1000, Low: 200}
	var f *fakeServer
	opts.OnWritable = func(c gnet.Conn) { f.h.CloseAfterFlush(c) }
	w := &writer{}
	f = newFakeServer(t, w, opts)
	shut := f.recordShutdowns(false)
	l := f.loop()
	c := openFake(f.h, l, 3)
	w.add = 1500
	f.traffic(c)
	require.False(t, f.h.Writable(c), "above High")

	// The peer drains and sends bytes, in the same event.
	calls := w.calls
	c.out, c.in, w.add = 0, 300, 0
	require.Equal(t, gnet.None, f.traffic(c))
	require.Equal(t, calls, w.calls, "the wrapped handler hears nothing after CloseAfterFlush")
	require.Zero(t, c.in, "the input is discarded")
	require.Equal(t, []int{3}, *shut, "drained: the write side is shut")
	checkBudget(t, f.h)
	require.Zero(t, f.h.Stats().Buffered, "nothing is held for it")
}

// TestGracefulShutdown checks Shutdown: new connections are refused, those
// between requests close at once, the others as they finish, and Shutdown
// returns nil when all have gone; with its context ended it closes the
// rest, reason Shutdown, and returns the context's error.
func TestGracefulShutdown(t *testing.T) {
	var refused int
	opts := limitOpts
	opts.OnRefuse = func(gnet.Conn) { refused++ }
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()
	idle := openFake(f.h, l, 3)
	busy := openFake(f.h, l, 4)
	f.h.SetIdleTimeout(busy, 0) // answering a request
	writing := openFake(f.h, l, 5)
	w.add = 100
	f.traffic(writing)
	deadline := openFake(f.h, l, 6)
	f.h.SetDeadline(deadline, f.clk.t.Add(time.Hour)) // a request head is coming

	require.False(t, f.h.ShuttingDown())
	done := make(chan error, 1)
	go func() { done <- f.h.Shutdown(context.Background()) }()
	require.Eventually(t, f.h.ShuttingDown, time.Second, time.Millisecond)
	late := &fakeConn{fd: 7, loop: l, open: true}
	_, action := f.h.OnOpen(late)
	require.Equal(t, gnet.Close, action, "refused once Shutdown has begun")
	require.NoError(t, l.Close(late))
	require.Equal(t, 1, refused)

	f.runFor(l, f.h.cfg.tick, nil)
	require.False(t, idle.open, "between requests: closed at once")
	require.True(t, busy.open && writing.open && deadline.open)
	f.h.SetIdleTimeout(busy, time.Second) // its answer written
	writing.out = 0
	f.h.SetDeadline(deadline, time.Time{})
	f.runFor(l, 2*f.h.cfg.tick, nil)
	require.False(t, busy.open || writing.open || deadline.open, "closed as they finish")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return once every connection closed")
	}
	require.Equal(t, []Reason{Shed, Shed, Shed, Shed}, f.reap)

	// A request that outlasts the context.
	g := newFakeServer(t, w, opts)
	gl := g.loop()
	stuck := openFake(g.h, gl, 3)
	g.h.SetIdleTimeout(stuck, 0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- g.h.Shutdown(ctx) }()
	require.Eventually(t, g.h.ShuttingDown, time.Second, time.Millisecond)
	g.runFor(gl, 10*g.h.cfg.tick, nil)
	require.True(t, stuck.open)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return at its context's end")
	}
	g.runFor(gl, g.h.cfg.tick, nil)
	require.False(t, stuck.open)
	require.Equal(t, []Reason{Shutdown}, g.reap)

	// The next engine starts afresh.
	g.h.OnShutdown(gnet.Engine{})
	g.h.OnBoot(gnet.Engine{})
	require.False(t, g.h.ShuttingDown())
	require.NotNil(t, g.slot(openFake(g.h, gl, 3)))
}

// overloadOpts are the options of the Overload tests: idle timeouts of a
// second shrink from 50 of MaxConns' 100 connections, to 100 ms at 100.
var overloadOpts = Options{Timeout: time.Second, Resolution: 20 * time.Millisecond, MaxConns: 100,
	Overload: Overload{Start: 0.5, Floor: 100 * time.Millisecond}}

// openOverloaded returns a fake server with overloadOpts and sixty
// connections open on its loop, descriptors 10 to 69: an idle scale of
// 0.8.
func openOverloaded(t *testing.T) (*fakeServer, *fakeLoop, []*fakeConn) {
	f := newFakeServer(t, &nopHandler{}, overloadOpts)
	l := f.loop()
	var conns []*fakeConn
	for fd := range 60 {
		conns = append(conns, openFake(f.h, l, 10+fd))
	}
	return f, l, conns
}

// TestOverload checks that idle timeouts shrink as connections near
// MaxConns: never below the floor, the idlest shed first, a busy
// connection kept, and Stats.IdleScale.
func TestOverload(t *testing.T) {
	f, l, conns := openOverloaded(t)
	opts := overloadOpts
	require.InDelta(t, 0.8, f.h.Stats().IdleScale, 1e-9)
	// Each connection's idle timeout is 100ms + 0.8*900ms = 820ms.
	chatty := conns[0]
	var first time.Duration
	start := f.clk.t
	f.runFor(l, 100*time.Millisecond, f.every(chatty, 20*time.Millisecond))
	for fd := range 40 { // fill up: the scale falls to 0
		conns = append(conns, openFake(f.h, l, 100+fd))
	}
	require.Equal(t, float64(0), f.h.Stats().IdleScale)
	f.runFor(l, 800*time.Millisecond, func(elapsed time.Duration) {
		f.every(chatty, 20*time.Millisecond)(elapsed)
		if first == 0 && f.h.Stats().Reaped(Idle) > 0 {
			first = f.clk.t.Sub(start)
		}
	})
	require.GreaterOrEqual(t, first, opts.Overload.Floor, "never below the floor")
	// The first sixty were idle longest and went first; the scale rose as
	// they went, sparing the forty opened last, and the chatty one.
	require.True(t, chatty.open)
	for _, c := range conns[60:] {
		require.True(t, c.open)
	}
	reaped := int(f.h.Stats().Reaped(Idle))
	require.Equal(t, 59, reaped)
	require.Equal(t, float64(1), f.h.Stats().IdleScale, "41 open: below Start")
}

// TestOverloadChurn checks that connections coming and going across the
// edge of one of Overload's steps run no pass over the loop's
// connections, which is O(descriptors): with 520 of MaxConns 1,024 open
// and Start at half, a hundred rounds of one close and one open, a tick
// apart, on a loop that runs every tick, run none. Before the passes' gate
// held a step of slack, each such round ran one.
func TestOverloadChurn(t *testing.T) {
	opts := Options{Timeout: time.Second, Resolution: 20 * time.Millisecond, MaxConns: 1024,
		Overload: Overload{Start: 0.5, Floor: 100 * time.Millisecond}}
	f := newFakeServer(t, &nopHandler{}, opts)
	l := f.loop()
	conns := make([]*fakeConn, 520)
	for i := range conns {
		conns[i] = openFake(f.h, l, 10+i)
	}
	tick := f.h.cfg.tick
	f.advance(tick, l)
	lp := f.h.loops.find(l)
	scans := lp.overloadScans
	require.Positive(t, scans, "the fill ran a pass")
	for i := range 100 {
		// The first connection talks, so that the loop runs at each tick
		// and sees the scale rise and fall, as a server's loops do.
		require.NoError(t, l.Close(conns[1+i]))
		f.h.OnTraffic(conns[0])
		f.advance(tick, l)
		conns[1+i] = openFake(f.h, l, 1000+i)
		f.h.OnTraffic(conns[0])
		f.advance(tick, l)
	}
	require.Equal(t, scans, lp.overloadScans, "passes over the connections while they came and went")
}

// TestOverloadLooksAtKernelQueue checks that the Overload pass, which
// closes the connections its shrunk idle timeouts have run out for, looks
// at the kernel's send queue as the timer does (idleLook): of sixty
// connections idle for 300 ms when forty more shrink their timeout to
// 100 ms, the one whose kernel queue holds unread output has its timeout
// start over, and is reset when it runs out again. A chatty connection
// wakes the loop, as in TestOverload.
func TestOverloadLooksAtKernelQueue(t *testing.T) {
	f, l, conns := openOverloaded(t)
	queued, chatty := conns[0], conns[1]
	f.queue[queued.fd] = kernelQueue{acked: 5, queued: 1 << 20}
	f.runFor(l, 300*time.Millisecond, f.every(chatty, 20*time.Millisecond))
	for fd := range 40 {
		openFake(f.h, l, 100+fd)
	}
	f.runFor(l, 20*time.Millisecond, f.every(chatty, 20*time.Millisecond))
	require.Equal(t, uint64(58), f.h.Stats().Reaped(Idle), "the pass closed the others")
	require.True(t, queued.open, "its timeout started over")
	f.runFor(l, 1200*time.Millisecond, f.every(chatty, 20*time.Millisecond))
	require.False(t, queued.open)
	require.Equal(t, []int{queued.fd}, f.aborted, "reset")
}

// TestBoundsZeroAllocs checks that the calls the bounds add, and the data
// path with output pending, allocate nothing once warm.
func TestBoundsZeroAllocs(t *testing.T) {
	opts := limitOpts
	opts.MinDrainRate = 1
	opts.Output = OutputLimit{Max: 1 << 30, High: 1000, Low: 500}
	opts.OnWritable = func(gnet.Conn) {}
	w := &writer{add: 10}
	f := newFakeServer(t, w, opts)
	f.recordShutdowns(false)
	l := f.loop()
	c := openFake(f.h, l, 3)
	d := openFake(f.h, l, 4)
	lim := OutputLimit{Max: 1 << 20, High: 2000, Low: 100}
	step := func() {
		f.traffic(c)
		c.out -= 5
		f.h.Writable(c)
		f.h.SetOutputLimit(c, lim)
		if c.out > 3000 {
			c.out = 0 // drained: writable again, through a poll
		}
		f.runFor(l, f.h.cfg.tick/4, nil)
	}
	linger := func() {
		f.h.CloseAfterFlush(d)
		_ = l.Close(d)
		f.h.OnOpen(d)
		d.open = true
	}
	for range 1000 {
		step()
		linger()
	}
	assert.Zero(t, testing.AllocsPerRun(1000, step), "traffic with output pending, Writable, SetOutputLimit, polls")
	assert.Zero(t, testing.AllocsPerRun(1000, linger), "CloseAfterFlush")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = f.h.ShuttingDown(); _ = f.h.Stats() }), "ShuttingDown, Stats")
}

// simPeer is one connection of TestOutputBoundsRandom: how its peer
// behaves, and what happened to it, as the reference sees it.
type simPeer struct {
	*fakeConn
	kind     int           // simFast and the others below
	add      int32         // what the server writes per request
	first    int32         // if not 0, what it writes for the first request instead
	every    time.Duration // between requests; 0 for none
	rate     int           // bytes the peer reads a second, until stallAt
	stallAt  time.Duration // when it stops reading
	nextSend time.Duration
	carry    int // read credit below a byte
	// A bursting peer reads burst bytes every burstEvery, from its first
	// answer on, instead of reading at rate.
	burst      int32
	burstEvery time.Duration
	nextBurst  time.Duration
	max        int // its output's Max, the round's unless set per connection
	// A closing peer's handler calls CloseAfterFlush with its answer from
	// closeAt on; probe says the application then asks Writable at each
	// step, and hangUp after how long from the close the peer closes
	// itself (0 never).
	closeAt, hangUp time.Duration
	probe           bool
	// The reference's record: the latest data, the latest drain, when
	// output last was empty, and every drain (time, bytes) of the last
	// windows.
	lastData, lastDrain, lastEmpty time.Duration
	drains                         []drainEvent
	closedAt                       time.Duration
	why                            Reason
	closedOut                      int32 // pending when closed
	// The water marks as the reference sees them: above says the output
	// has passed High since it was last at or below Low, lowAt when it
	// came down to Low with above still set (-1 if not), writable the
	// OnWritable calls.
	above    bool
	lowAt    time.Duration
	writable int
	// The lingering close: when CloseAfterFlush was called, when the
	// output was then first found empty, when the write side was shut
	// (-1 for not yet), and whether the peer hung up.
	closingAt, emptiedAt, shutAt time.Duration
	closing, hungUp              bool
	lateCalls                    int // wrapped handler's calls after CloseAfterFlush
}

// The peers of TestOutputBoundsRandom, by fd modulo simKinds.
const (
	simFast    = iota // fast and chatty: never closed
	simStops          // stops reading
	simSlow           // reads slowly
	simGreedy         // asks for more than it reads
	simSilent         // sends nothing
	simPolite         // its handler asks Writable before each answer
	simOnce           // one large answer, read steadily after it stops sending
	simExact          // drains exactly MinDrainRate*DrainWindow a window
	simClosing        // its handler closes it after flush
	simKinds
)

type drainEvent struct {
	at    time.Duration
	bytes int
}

// simWriter is the wrapped handler of TestOutputBoundsRandom: each
// request is answered with the peer's add bytes, which stay pending. A
// polite peer's handler answers only while Writable says so, which it
// checks against the reference's water marks; a closing peer's handler
// calls CloseAfterFlush with its answer once its time has come.
type simWriter struct {
	gnet.BuiltinEventEngine
	t       *testing.T
	h       *Handler
	out     OutputLimit
	elapsed func() time.Duration
}

func (w *simWriter) OnTraffic(c gnet.Conn) gnet.Action {
	p := c.Context().(*simPeer)
	if p.closing {
		p.lateCalls++ // CloseAfterFlush: the wrapped handler hears no more
		return gnet.None
	}
	n := p.add
	if p.first != 0 {
		n, p.first = p.first, 0
	}
	if p.kind == simPolite {
		// Not writable from above High until at or below Low: a
		// handler told so between the marks would write on, which the
		// low-water mark taken for the high one (low-mark-is-high) does.
		want := !p.above || int(p.out) <= w.out.Low
		if got := w.h.Writable(c); got != want {
			w.t.Errorf("fd %d: Writable %v with %d pending (High %d, Low %d, above High since: %v), want %v",
				p.fd, got, p.out, w.out.High, w.out.Low, p.above, want)
		} else if !got {
			n = 0 // it waits for OnWritable
		} else {
			p.above = false // Writable told the handler first: no OnWritable
		}
	}
	p.out += n
	if int(p.out) > w.out.High {
		p.above, p.lowAt = true, -1
	}
	if p.kind == simClosing && w.elapsed() >= p.closeAt {
		p.closing, p.closingAt = true, w.elapsed()
		require.True(w.t, w.h.CloseAfterFlush(c))
		if p.out == 0 {
			p.emptiedAt = p.closingAt
		}
	}
	return gnet.None
}

// TestOutputBoundsRandom checks the bounds on output against a reference
// over random peers and options on a fake clock: every close comes for a
// reason the reference agrees with, never early (a write stall after a
// whole timeout without a drain, a slow drain after a whole window with
// output pending and too little drained, idle after a whole timeout with
// neither data nor a drain, output full above Max, linger after a whole
// Linger from the shut) and, with the loop on time, at most Resolution
// late; a peer that reads fast enough and sends often enough is never
// closed. The rarer states are reached on purpose, each catching a
// mutant that survived before them:
//
//   - a peer that stops sending after one large answer, which it reads
//     steadily for longer than the idle timeout: its drains are activity
//     (drain-not-activity);
//   - that answer and another peer's fill their output exactly to Max,
//     set per connection: at Max is not above it (output-full-at-max);
//   - a peer that drains exactly MinDrainRate*DrainWindow, rounded up,
//     once a window, in bursts: enough is not fewer (roll-drain-strict);
//   - handlers that ask Writable before each answer, checked against the
//     water marks, and OnWritable, once per passing of High, only at or
//     below Low, within a tick of the drain, never while closing
//     (low-mark-is-high);
//   - closing peers, CloseAfterFlush with their last answer: the write
//     side is shut once the output is found drained, and the connection
//     closed Linger to Linger+Resolution after the shut, unless the peer
//     hangs up first. Half of them hold back their last byte until a
//     tick has begun and their application then asks Writable, which
//     sees the drain before the loop's runnable has refreshed its tick:
//     the shut then comes in the tick after the one the loop knows, and
//     a linger counted from the loop's tick without the tick it lags
//     closes early (linger-tick-early), when the tick is not a whole
//     number of the test's steps. Linger is a whole number of ticks, so
//     that rounding it up hides nothing.
func TestOutputBoundsRandom(t *testing.T) {
	t.Parallel() // a fake clock: CPU alone, run while the network tests wait
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 24 {
		timeout := time.Duration(50+rng.IntN(200)) * time.Millisecond
		res := max(timeout/time.Duration(2+rng.IntN(8)), MinResolution)
		tick := res / ticksPerResolution
		high := 4000 + rng.IntN(8000)
		opts := Options{Timeout: timeout, Resolution: res, Wheel: WheelKind(rng.IntN(2)),
			WriteStallTimeout: time.Duration(20+rng.IntN(200)) * time.Millisecond,
			Output:            OutputLimit{Max: 20_000 + rng.IntN(50_000), High: high, Low: 500 + rng.IntN(high-499)},
			Linger:            tick * time.Duration(4+rng.IntN(int(2*timeout/tick)))}
		if rng.IntN(3) > 0 {
			opts.MinDrainRate = 10_000 + rng.IntN(100_000)
			opts.DrainWindow = max(res, time.Duration(20+rng.IntN(200))*time.Millisecond)
			if rng.IntN(2) == 0 {
				// A share of whole bytes: a whole rate in thousands over
				// whole milliseconds.
				opts.MinDrainRate = opts.MinDrainRate / 1000 * 1000
				opts.DrainWindow = opts.DrainWindow.Round(time.Millisecond)
				if opts.DrainWindow < res {
					opts.DrainWindow += time.Millisecond
				}
			}
		}
		// The share of a window as documented, rounded up: not fewer than
		// MinDrainRate bytes a second over DrainWindow.
		share := int32((int64(opts.MinDrainRate)*int64(opts.DrainWindow) + int64(time.Second) - 1) / int64(time.Second))
		t.Run(fmt.Sprintf("round=%d", round), func(t *testing.T) {
			var peers []*simPeer
			var f *fakeServer
			elapsed := func() time.Duration { return f.clk.t.Sub(time.Unix(1e9, 0)) }
			opts.OnReap = func(c gnet.Conn, why Reason) {
				p := c.Context().(*simPeer)
				p.closedAt, p.why, p.closedOut = elapsed(), why, p.out
			}
			opts.OnWritable = func(c gnet.Conn) {
				p := c.Context().(*simPeer)
				switch {
				case p.closing:
					t.Errorf("fd %d: OnWritable while closing after flush", p.fd)
				case !p.above:
					t.Errorf("fd %d: OnWritable with output not above High since it was last at Low", p.fd)
				case int(p.out) > opts.Output.Low:
					t.Errorf("fd %d: OnWritable with %d pending, above Low %d (low-mark-is-high)", p.fd, p.out, opts.Output.Low)
				}
				p.above, p.lowAt = false, -1
				p.writable++
			}
			sw := &simWriter{t: t, out: opts.Output, elapsed: elapsed}
			f = newFakeServer(t, sw, opts)
			sw.h = f.h
			require.Equal(t, tick, f.h.cfg.tick)
			l := f.loop()
			need := f.h.cfg.drainBytes
			if opts.MinDrainRate != 0 {
				// The share configured is the documented one, to the
				// byte (drainShare).
				require.Equal(t, int(share), need, "MinDrainRate %d over %v", opts.MinDrainRate, opts.DrainWindow)
			}
			byFd := map[int]*simPeer{}
			f.h.shutdownWrite = func(fd int) error {
				p := byFd[fd]
				switch {
				case p == nil || !p.closing:
					t.Errorf("fd %d: write side shut, not closing after flush", fd)
				case p.shutAt >= 0:
					t.Errorf("fd %d: write side shut twice", fd)
				default:
					p.shutAt = elapsed()
				}
				return nil
			}
			for fd := range 6 * simKinds {
				p := &simPeer{kind: fd % simKinds, closedAt: -1, stallAt: 1 << 62, max: opts.Output.Max,
					lowAt: -1, closingAt: -1, emptiedAt: -1, shutAt: -1}
				fast := 2 * max(opts.MinDrainRate, 100_000) // fast enough for any drain rate
				switch p.kind {
				case simFast:
					p.add, p.every, p.rate = 500, timeout/4, 10*max(opts.MinDrainRate, 100_000)
				case simStops:
					p.add, p.every, p.rate = 500, timeout/4, 200_000
					p.stallAt = time.Duration(rng.Int64N(int64(2 * timeout)))
				case simSlow:
					p.add, p.every, p.rate = 500, timeout/4, rng.IntN(max(opts.MinDrainRate, 1))
				case simGreedy:
					p.add, p.every, p.rate = int32(2000+rng.IntN(8000)), timeout/8, 50_000
				case simPolite:
					// Asks for about twice what it reads, so that its
					// output passes High and it waits for OnWritable.
					p.add, p.every = int32(1000+rng.IntN(high)), timeout/8
					p.rate = int(time.Duration(p.add) * time.Second / (2 * p.every))
				case simOnce:
					// One answer, read for two to four idle timeouts at
					// twice any drain rate; it fills the output to Max.
					d := timeout * time.Duration(2+rng.IntN(3))
					p.first = int32(max(int64(2*max(opts.MinDrainRate, 10_000))*int64(d)/int64(time.Second), int64(2*high)))
					p.rate = int(int64(p.first) * int64(time.Second) / int64(d))
					p.every, p.max = 1<<62, int(p.first)
				case simExact:
					// An empty answer every timeout/4 after the first, a
					// large one at Max which outlasts the round, read in
					// bursts of exactly the share, once a window; no
					// write stall, which a window's silence would pass.
					p.every, p.burst, p.burstEvery = timeout/4, share, opts.DrainWindow
					if opts.MinDrainRate == 0 {
						p.burst, p.burstEvery = 1000, timeout
					}
					p.first = int32(max(int64(p.burst)*int64(10*timeout/p.burstEvery+2), int64(2*high)))
					p.max = int(p.first)
				case simClosing:
					// It reads more than it asks for (at least 2,500 bytes
					// between requests): closed for nothing but Linger.
					p.add, p.every, p.rate = int32(rng.IntN(3)*rng.IntN(1200)), timeout/4, fast
					p.closeAt = time.Duration(rng.Int64N(int64(2 * timeout)))
					p.probe = rng.IntN(2) == 0
					if rng.IntN(3) == 0 {
						p.hangUp = time.Duration(rng.Int64N(int64(2 * opts.Linger)))
					}
				default: // silent
				}
				p.fakeConn = &fakeConn{fd: 10 + fd, loop: l, open: true}
				p.fakeConn.ctx = p
				f.h.OnOpen(p.fakeConn)
				p.fakeConn.ctx = p // the wrapped handler's context is its own
				if p.max != opts.Output.Max {
					require.True(t, f.h.SetOutputLimit(p.fakeConn, OutputLimit{Max: p.max, High: high, Low: opts.Output.Low}))
				}
				if p.kind == simExact {
					require.True(t, f.h.SetWriteStallTimeout(p.fakeConn, 0))
				}
				byFd[p.fd] = p
				peers = append(peers, p)
			}
			const step = 250 * time.Microsecond
			end := 8 * timeout
			for elapsed() < end {
				f.clk.t = f.clk.t.Add(step)
				now := elapsed()
				// The loop's runnable has not yet run for a tick just begun.
				newTick := f.h.clock.Tick(f.clk.t) != f.h.clock.Tick(f.clk.t.Add(-step))
				for _, p := range peers {
					if !p.open {
						continue
					}
					if p.closing && p.hangUp > 0 && now >= p.closingAt+p.hangUp {
						p.hungUp = true
						require.NoError(t, l.Close(p.fakeConn))
						continue
					}
					if p.every > 0 && now >= p.nextSend {
						p.lastData, p.nextSend = now, now+p.every
						if f.traffic(p.fakeConn) == gnet.Close {
							continue
						}
						if p.burst > 0 && p.nextBurst == 0 {
							p.nextBurst = now + p.burstEvery
						}
					}
					var n int32
					switch {
					case p.burst > 0:
						if p.nextBurst > 0 && now >= p.nextBurst {
							n, p.nextBurst = min(p.burst, p.out), p.nextBurst+p.burstEvery
						}
					case now < p.stallAt && p.out > 0:
						p.carry += p.rate * int(step) / int(time.Second)
						n = min(int32(p.carry), p.out)
						if p.closing && p.probe && n == p.out && !newTick {
							n-- // the last byte waits for a tick to begin
						}
						p.carry -= int(max(n, 0))
					case now >= p.stallAt:
						p.carry = 0
					}
					if n > 0 {
						p.out -= n
						p.lastDrain = now
						p.drains = append(p.drains, drainEvent{now, int(n)})
					}
					if p.out == 0 {
						p.lastEmpty = now
						if p.closing && p.emptiedAt < 0 {
							p.emptiedAt = now
						}
					}
					if p.closing && p.probe {
						f.h.Writable(p.fakeConn) // the application asks, on the loop, before its runnable
					}
				}
				f.h.wake(f.clk.t)
				l.runQueued()
				checkInvariants(t, f.h)
				for _, p := range peers {
					// OnWritable comes by the tick after the drain to Low:
					// the connection is looked at each tick while output is
					// pending, and polled more often.
					if !p.open || p.closing || !p.above || int(p.out) > opts.Output.Low {
						continue
					}
					if p.lowAt < 0 {
						p.lowAt = now
					}
					if now-p.lowAt > tick+step {
						t.Fatalf("fd %d: drained to Low (%d pending) at %v, no OnWritable by %v", p.fd, p.out, p.lowAt, now)
					}
				}
			}

			for i, p := range peers {
				require.Zero(t, p.lateCalls, "peer %d: the wrapped handler called after CloseAfterFlush", i)
				switch p.kind {
				case simFast:
					require.Equal(t, -time.Duration(1), p.closedAt, "peer %d closed (%v)", i, p.why)
					continue
				case simOnce:
					// Read to the end, then idle: drains are activity
					// (drain-not-activity) and at Max is not above it
					// (output-full-at-max).
					require.Equal(t, Idle, p.why, "peer %d, reading its answer at %d B/s, closed at %v with %d of %d pending",
						i, p.rate, p.closedAt, p.closedOut, p.max)
					require.Zero(t, p.closedOut, "peer %d closed idle while reading its answer (drain-not-activity)", i)
				case simExact:
					require.Equal(t, -time.Duration(1), p.closedAt,
						"peer %d, draining %d bytes each %v window (share %d as documented, %d as configured), closed (%v) with %d pending: "+
							"a share drained is enough (roll-drain-strict), at Max is not above it (output-full-at-max)",
						i, p.burst, p.burstEvery, share, need, p.why, p.closedOut)
					continue
				case simClosing:
					if p.hungUp {
						require.Equal(t, -time.Duration(1), p.closedAt, "peer %d hung up, but was closed first (%v)", i, p.why)
						continue
					}
					if p.closing {
						require.Equal(t, Linger, p.why, "peer %d, closing after flush at %v, closed at %v (open %v)", i, p.closingAt, p.closedAt, p.open)
					}
					if p.shutAt >= 0 {
						require.GreaterOrEqual(t, p.emptiedAt, time.Duration(0), "peer %d shut before its output drained", i)
						require.GreaterOrEqual(t, p.shutAt, p.emptiedAt, "peer %d shut before its output drained", i)
						require.LessOrEqual(t, p.shutAt-p.emptiedAt, tick+step, "peer %d: its drain seen late, at the shut", i)
					}
				}
				if p.closedAt < 0 {
					continue
				}
				at := p.closedAt
				switch p.why {
				case OutputFull:
					require.Greater(t, int(p.closedOut), p.max, "peer %d closed at Max or below (output-full-at-max)", i)
				case WriteStall:
					since := max(p.lastDrain, p.lastEmpty)
					require.GreaterOrEqual(t, at-since, opts.WriteStallTimeout, "peer %d stalled early", i)
					require.LessOrEqual(t, at-since, opts.WriteStallTimeout+res, "peer %d stalled late", i)
				case SlowDrain:
					require.NotZero(t, need)
					require.GreaterOrEqual(t, at-p.lastEmpty, opts.DrainWindow, "peer %d: output not pending a whole window", i)
					drained := 0
					for _, d := range p.drains {
						if d.at > at-opts.DrainWindow {
							drained += d.bytes
						}
					}
					require.Less(t, drained, need, "peer %d drained enough in its last window", i)
				case Idle:
					since := max(p.lastData, p.lastDrain)
					require.GreaterOrEqual(t, at-since, timeout, "peer %d idle early", i)
					require.LessOrEqual(t, at-since, timeout+res, "peer %d idle late", i)
				case Linger:
					require.True(t, p.closing, "peer %d", i)
					require.GreaterOrEqual(t, p.shutAt, time.Duration(0), "peer %d lingered, never shut", i)
					require.GreaterOrEqual(t, at-p.shutAt, opts.Linger, "peer %d: linger closed early after the shut (linger-tick-early)", i)
					require.LessOrEqual(t, at-p.shutAt, opts.Linger+res, "peer %d: linger closed late", i)
				default:
					t.Fatalf("peer %d closed for %v", i, p.why)
				}
			}
			st := f.h.Stats()
			writable := 0
			for _, p := range peers {
				writable += p.writable
			}
			t.Logf("closed: output full %d, write stall %d, slow drain %d, idle %d, linger %d; open %d; OnWritable %d; share %d, configured %d",
				st.Reaped(OutputFull), st.Reaped(WriteStall), st.Reaped(SlowDrain), st.Reaped(Idle), st.Reaped(Linger), st.Tracked,
				writable, share, need)
			require.True(t, settled(f.h, st.Tracked))
		})
	}
}

// checkInvariants fails t at the first violation of what the package
// keeps true between events (see invariants).
func checkInvariants(t testing.TB, h *Handler) {
	if err := invariants(h); err != nil {
		t.Helper()
		t.Fatal(err)
	}
}

// invariants checks what the package keeps true of every loop and tracked
// connection: the tracked count, a timer armed whenever a timed limit is
// on, output pending looked at by the next tick, a shut connection
// closing, a polled one in its loop's list, and an unwritable one above
// its low-water mark. It returns the first violation. It runs at every
// step of TestOutputBoundsRandom, so it tests each condition in plain Go:
// a require call per connection per step, each calling t.Helper, which
// walks the stack, took 85% of that test's time.
func invariants(h *Handler) error {
	for _, l := range h.loops.all() {
		tracked := 0
		var err error
		h.table.each(l, func(s *slot) bool {
			tracked++
			m := s.lim()
			fd := m.c.Fd()
			due, _ := l.dueOf(s, l.lastTick())
			switch {
			case due != packwheel.MaxTick && !s.timer.Active():
				err = fmt.Errorf("fd %d: a limit on, no timer", fd)
			case s.pend != 0 && !s.timer.Active():
				err = fmt.Errorf("fd %d: output pending, no timer", fd)
			case s.pend != 0 && s.timer.Deadline() > l.lastTick()+1:
				err = fmt.Errorf("fd %d: output pending, not looked at next tick (due %d, now %d)", fd, s.timer.Deadline(), l.lastTick())
			case s.flags&shut != 0 && s.flags&closing == 0:
				err = fmt.Errorf("fd %d: shut but not closing", fd)
			case s.flags&unwritable != 0 && s.pend <= m.output.Low:
				err = fmt.Errorf("fd %d: unwritable at or below Low (%d pending, Low %d)", fd, s.pend, m.output.Low)
			case s.flags&polled != 0 && !slices.ContainsFunc(l.polls, func(p poll) bool { return p.s == s }):
				err = fmt.Errorf("fd %d: polled, not in the list", fd)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		if n := int(l.tracked.Load()); n != tracked {
			return fmt.Errorf("the loop counts %d tracked connections, its table holds %d", n, tracked)
		}
	}
	return nil
}

// TestDrainShare checks the bytes a window must drain against the product
// worked by hand: rounded up when it is not whole, exact where a float64
// product falls short of a whole number, and maxInt where the product
// does not fit.
func TestDrainShare(t *testing.T) {
	for _, c := range []struct {
		rate   int
		window time.Duration
		want   int
	}{
		{3, 500 * time.Millisecond, 2},            // 1.5
		{1, time.Nanosecond, 1},                   // a billionth
		{17_496, time.Second, 17_496},             // whole
		{10_250, 700 * time.Millisecond, 7_175},   // 7,175 exactly; 7,174.999... as a float64 product
		{maxInt, 1500 * time.Millisecond, maxInt}, // a quotient past maxInt
		{maxInt, 10 * time.Second, maxInt},        // a quotient past 64 bits
	} {
		require.Equal(t, c.want, drainShare(c.rate, c.window), "%d B/s over %v", c.rate, c.window)
	}
}

package idleconn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer is a Handler over fake loops and a fake clock, for tests that
// drive events one by one.
type fakeServer struct {
	clk     *fakeClock
	h       *Handler
	reap    []Reason
	unsent  map[int]int // the bound each descriptor's open gave the kernel (boundUnsent)
	aborted []int       // the descriptors whose close was made a reset (abortOnClose)
	// queue is what each descriptor's kernel send queue holds (unreadQueue):
	// none unless set.
	queue map[int]kernelQueue
}

// kernelQueue is what unreadQueue reports of a fake descriptor.
type kernelQueue struct{ acked, queued uint64 }

func newFakeServer(t testing.TB, user gnet.EventHandler, opts Options) *fakeServer {
	f := &fakeServer{clk: &fakeClock{t: time.Unix(1e9, 0)}}
	if opts.OnReap == nil {
		opts.OnReap = func(_ gnet.Conn, why Reason) { f.reap = append(f.reap, why) }
	}
	h, err := newHandler(user, opts, f.clk.now)
	require.NoError(t, err)
	f.h = h
	// A fake's descriptor may be a real one of the test process.
	f.unsent = map[int]int{}
	h.boundUnsent = func(fd, n int) { f.unsent[fd] = n }
	h.abortOnClose = func(fd int) { f.aborted = append(f.aborted, fd) }
	f.queue = map[int]kernelQueue{}
	h.unreadQueue = func(fd int) (uint64, uint64) { return f.queue[fd].acked, f.queue[fd].queued }
	h.OnBoot(gnet.Engine{})
	return f
}

// engineCounts are the Stats that depend on the engine running.
type engineCounts struct{ Loops, Tracked, Timers int }

func countsOf(h *Handler) engineCounts {
	s := h.Stats()
	return engineCounts{s.Loops, s.Tracked, s.Timers}
}

func (f *fakeServer) loop() *fakeLoop { return &fakeLoop{h: f.h} }

// advance moves the clock by d in steps of one tick, ticking and running
// the loops' runnables at each.
func (f *fakeServer) advance(d time.Duration, loops ...*fakeLoop) {
	for end := f.clk.t.Add(d); f.clk.t.Before(end); {
		f.clk.t = f.clk.t.Add(f.h.cfg.tick)
		f.h.wake(f.clk.t)
		for _, l := range loops {
			l.runQueued()
		}
	}
}

// slot returns c's slot if c is tracked.
func (f *fakeServer) slot(c *fakeConn) *slot {
	s, _ := f.h.tracking(c)
	return s
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		err  string
	}{
		{Options{}, "idleconn: Timeout 0s must be at least 1ms"},
		{Options{Timeout: time.Second, Resolution: time.Microsecond}, "idleconn: Resolution 1µs must lie between 1ms and Timeout (1s)"},
		{Options{Timeout: time.Second, Resolution: 2 * time.Second}, "idleconn: Resolution 2s must lie between 1ms and Timeout (1s)"},
		{Options{Timeout: time.Hour, Resolution: time.Second}, "idleconn: Resolution 1s must be at least Timeout/1024 (3.515625s)"},
		{Options{Timeout: time.Second, Wheel: 7}, "idleconn: Wheel WheelKind(7) is neither Hashed nor Hierarchical"},
		{Options{Timeout: time.Second, MaxLifetime: -1}, "idleconn: MaxLifetime must not be negative (zero means no limit)"},
		{Options{Timeout: time.Second, DrainWindow: -1}, "idleconn: DrainWindow must not be negative (zero means 10s)"},
		{Options{Timeout: time.Second, Linger: -1}, "idleconn: Linger must not be negative (zero means DefaultLinger)"},
		{Options{Timeout: time.Second, MinDrainRate: -1}, "idleconn: MinDrainRate must not be negative (zero means no limit)"},
		{Options{Timeout: time.Second, DrainWindow: time.Second}, "idleconn: DrainWindow is set but MinDrainRate is not"},
		{Options{Timeout: time.Second, MinDrainRate: 1, DrainWindow: time.Millisecond}, "idleconn: DrainWindow 1ms must be at least Resolution (125ms)"},
		{Options{Timeout: time.Second, MaxInput: -1}, "idleconn: MaxInput must not be negative (zero means DefaultMaxInput)"},
		{Options{Timeout: time.Second, Output: OutputLimit{Max: 10, High: 20, Low: 5}}, "idleconn: Output {Max:10 High:20 Low:5}: want 0 < Low <= High <= Max"},
		{Options{Timeout: time.Second, Output: OutputLimit{Max: 10, High: 5, Low: 6}}, "idleconn: Output {Max:10 High:5 Low:6}: want 0 < Low <= High <= Max"},
		{Options{Timeout: time.Second, Output: OutputLimit{Max: 10}}, "idleconn: Output {Max:10 High:0 Low:0}: want 0 < Low <= High <= Max"},
		{Options{Timeout: time.Second, MaxConns: -1, Overload: Overload{Start: 0.5, Floor: time.Second}}, "idleconn: Overload needs a MaxConns limit"},
		{Options{Timeout: time.Second, MaxConns: 10, Overload: Overload{Start: 1, Floor: time.Second}}, "idleconn: Overload.Start 1 must lie strictly between 0 and 1"},
		{Options{Timeout: time.Second, MaxConns: 10, Overload: Overload{Floor: time.Second}}, "idleconn: Overload.Start 0 must lie strictly between 0 and 1"},
		{Options{Timeout: time.Second, MaxConns: 10, Overload: Overload{Start: 0.5, Floor: time.Millisecond}}, "idleconn: Overload.Floor 1ms must lie between Resolution (125ms) and Timeout (1s)"},
		{Options{Timeout: time.Second, MaxConns: 10, Overload: Overload{Start: 0.5, Floor: 2 * time.Second}}, "idleconn: Overload.Floor 2s must lie between Resolution (125ms) and Timeout (1s)"},
		{Options{Timeout: time.Second, MaxConns: openFilesLimit()}, fmt.Sprintf("idleconn: MaxConns %d must lie below the open-files limit (ulimit -n), %[1]d, "+
			"less the descriptors held for anything else and a burst of accepts: at most DefaultMaxConns(), %d, or raise the limit", openFilesLimit(), DefaultMaxConns())},
		{Options{Timeout: time.Second, MaxConns: DefaultMaxConns() + 1}, fmt.Sprintf("idleconn: MaxConns %d must lie below the open-files limit (ulimit -n), %d, "+
			"less the descriptors held for anything else and a burst of accepts: at most DefaultMaxConns(), %d, or raise the limit", DefaultMaxConns()+1, openFilesLimit(), DefaultMaxConns())},
		{Options{Timeout: time.Second, Budget: -2}, "idleconn: Budget -2: want bytes, 0 for DefaultBudget() or -1 for none"},
		{Options{Timeout: time.Second, MaxUnsent: -2}, "idleconn: MaxUnsent -2: want bytes, 0 for DefaultMaxUnsent or -1 for the kernel's own bound"},
		{Options{Timeout: time.Second, Budget: 1 << 10}, "idleconn: Budget 1024 must be at least 196608, what one connection may keep under pressure (MaxInput's floor and twice Output.High)"},
		{Options{Timeout: time.Second, Budget: 100_000, MaxInput: 4096, Output: OutputLimit{Max: 1 << 20, High: 64 << 10, Low: 1}}, "idleconn: Budget 100000 must be at least 135168, what one connection may keep under pressure (MaxInput's floor and twice Output.High)"},
	} {
		_, err := New(&nopHandler{}, tc.opts)
		assert.EqualError(t, err, tc.err, "%+v", tc.opts)
	}
	_, err := New(nil, Options{Timeout: time.Second})
	assert.EqualError(t, err, "idleconn: the handler to wrap is nil")
	t.Run("MaxConns 999999", func(t *testing.T) {
		if openFilesLimit() > 999_999 {
			t.Skipf("ulimit -n is %d: 999,999 connections fit", openFilesLimit())
		}
		_, err := New(&nopHandler{}, Options{Timeout: time.Second, MaxConns: 999_999})
		assert.EqualError(t, err, fmt.Sprintf("idleconn: MaxConns 999999 must lie below the open-files limit (ulimit -n), %d, "+
			"less the descriptors held for anything else and a burst of accepts: at most DefaultMaxConns(), %d, or raise the limit", openFilesLimit(), DefaultMaxConns()))
	})

	h, err := New(&nopHandler{}, Options{Timeout: 30 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second/8, h.cfg.resolution, "default Resolution")
	assert.Equal(t, 64, h.cfg.slots, "one revolution spans Timeout")
	h, err = New(&nopHandler{}, Options{Timeout: 2 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, MinResolution, h.cfg.resolution, "default Resolution is at least MinResolution")

	// The bounds' defaults, and none for MaxConns below zero.
	assert.Equal(t, DefaultOutput, h.cfg.output)
	assert.Equal(t, DefaultMaxInput, h.cfg.maxInput)
	assert.Equal(t, DefaultMaxUnsent, h.cfg.maxUnsent)
	assert.Equal(t, limitTicks(DefaultLinger, h.cfg.tick), h.cfg.lingerTicks)
	assert.Equal(t, DefaultMaxConns(), h.Stats().MaxConns)
	assert.Positive(t, DefaultMaxConns(), "this machine has a descriptor limit")
	assert.Equal(t, DefaultBudget(), h.Stats().Budget)
	_, err = New(&nopHandler{}, Options{Timeout: time.Second, MaxConns: DefaultMaxConns(), Budget: 196608})
	assert.NoError(t, err, "MaxConns at its most, a Budget at its least")
	h, err = New(&nopHandler{}, Options{Timeout: time.Second, MaxConns: -1, MinDrainRate: 1000})
	require.NoError(t, err)
	assert.Zero(t, h.Stats().MaxConns)
	assert.Equal(t, 10_000, h.cfg.drainBytes, "1000 B/s over the default 10s window")
	assert.NoError(t, DefaultOutput.check("DefaultOutput"))
}

// TestFdReuse checks that a connection given the descriptor of one that
// closed starts afresh, and that tracking state follows opens and closes.
func TestFdReuse(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	l := f.loop()
	old := openFake(f.h, l, 7)
	f.advance(90*time.Millisecond, l)
	f.h.OnTraffic(old)
	require.NoError(t, l.Close(old))
	require.Nil(t, f.slot(old))
	require.True(t, settled(f.h, 0))

	f.advance(50*time.Millisecond, l)
	fresh := openFake(f.h, l, 7)
	s := f.slot(fresh)
	require.NotNil(t, s)
	require.Equal(t, f.h.clock.Tick(f.clk.t), s.lim().life.born, "the new connection's open time is its own")
	require.Equal(t, settledAt(s.lim().life.born), s.last, "the new connection has received nothing: it is idle since its open")
	f.h.OnTraffic(old) // a stale event for the old connection touches nothing
	f.advance(90*time.Millisecond, l)
	require.True(t, fresh.open, "closed before its own timeout")
	f.advance(40*time.Millisecond, l)
	require.False(t, fresh.open, "not closed within Timeout+Resolution")
	require.Equal(t, []Reason{Idle}, f.reap)
	require.True(t, settled(f.h, 0))
}

// TestTouchUntrack checks the explicit calls a wrapped handler can make.
func TestTouchUntrack(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	l := f.loop()
	a, b, c := openFake(f.h, l, 3), openFake(f.h, l, 4), openFake(f.h, l, 5)
	require.True(t, settled(f.h, 3))
	require.True(t, f.h.Untrack(b))
	require.False(t, f.h.Untrack(b), "already untracked")
	require.True(t, settled(f.h, 2))
	for range 5 {
		f.advance(60*time.Millisecond, l)
		f.h.Touch(a)
	}
	require.True(t, a.open)
	require.True(t, b.open, "untracked connections are never reaped")
	require.False(t, c.open)
	f.h.Touch(b) // does not track it again
	require.True(t, settled(f.h, 1))
	require.NoError(t, l.Close(a))
	require.NoError(t, l.Close(b))
	require.True(t, settled(f.h, 0))
	require.Equal(t, engineCounts{Loops: 1}, countsOf(f.h))
	require.Equal(t, uint64(1), f.h.Stats().Reaped(Idle))
}

// TestLifetime checks that MaxLifetime closes a busy connection.
func TestLifetime(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond, MaxLifetime: 250 * time.Millisecond})
	l := f.loop()
	c := openFake(f.h, l, 3)
	for range 24 {
		f.advance(10*time.Millisecond, l)
		f.h.OnTraffic(c)
	}
	require.True(t, c.open, "closed before MaxLifetime")
	for range 3 {
		f.advance(10*time.Millisecond, l)
		f.h.OnTraffic(c)
	}
	require.False(t, c.open, "open after MaxLifetime+Resolution")
	require.Equal(t, []Reason{Lifetime}, f.reap)
	require.Equal(t, uint64(1), f.h.Stats().Reaped(Lifetime))
}

// TestBurst checks that a burst of expiries larger than one batch is
// reaped in several runs of the loop's runnable, each bounded.
func TestBurst(t *testing.T) {
	for _, kind := range []WheelKind{Hashed, Hierarchical} {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Wheel: kind})
			l := f.loop()
			for fd := range 3*reapBatch + 10 {
				openFake(f.h, l, fd)
			}
			f.clk.t = f.clk.t.Add(200 * time.Millisecond)
			f.h.wake(f.clk.t)
			runs := 0
			for len(l.queued) > 0 {
				r := l.queued[0]
				l.queued = l.queued[1:]
				require.NoError(t, r.Run(context.Background()))
				runs++
			}
			require.Equal(t, 4, runs)
			require.True(t, settled(f.h, 0))
			require.Equal(t, uint64(3*reapBatch+10), f.h.Stats().Reaped(Idle))
		})
	}
}

// TestShutdown checks that OnShutdown drops all state, that connections
// closed afterwards find none, and that a new engine starts afresh.
func TestShutdown(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: time.Second})
	l1, l2 := f.loop(), f.loop()
	a, b := openFake(f.h, l1, 3), openFake(f.h, l2, 5)
	require.Equal(t, 2, f.h.Stats().Loops)
	f.h.OnShutdown(gnet.Engine{})
	require.Equal(t, engineCounts{}, countsOf(f.h))
	c := openFake(f.h, l1, 4) // accepted while the engine winds down
	require.NoError(t, l1.Close(a))
	require.NoError(t, l2.Close(b))
	require.NoError(t, l1.Close(c))
	require.Equal(t, engineCounts{}, countsOf(f.h))

	f.h.OnBoot(gnet.Engine{})
	openFake(f.h, l1, 3)
	require.Equal(t, engineCounts{Loops: 1, Tracked: 1, Timers: 1}, countsOf(f.h))
}

// closeKeeper wraps a Handler and, once keep is set, keeps OnClose from it,
// as a faulty wrapping handler would.
type closeKeeper struct {
	*Handler
	keep bool
}

func (k *closeKeeper) OnClose(c gnet.Conn, err error) gnet.Action {
	if k.keep {
		return gnet.None
	}
	return k.Handler.OnClose(c, err)
}

// TestOnCloseKept checks that a Handler whose OnClose a wrapping handler
// keeps from it says so, with its package's message, as soon as it can
// tell: when the descriptor opens again, on the same loop or another, and
// when a connection it closed is not reported closed. Nothing changes
// before the panic: the connection still tracked stays as it was.
func TestOnCloseKept(t *testing.T) {
	const msg = "a handler wrapping idleconn.Handler must pass OnClose on"
	opts := Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond}
	for _, sameLoop := range []bool{true, false} {
		f := newFakeServer(t, &nopHandler{}, opts)
		k := &closeKeeper{Handler: f.h}
		l1, l2 := &fakeLoop{h: k}, &fakeLoop{h: k}
		old := openFake(f.h, l1, 7)
		k.keep = true
		require.NoError(t, l1.Close(old))
		next := l1
		if !sameLoop {
			next = l2
		}
		reused := &fakeConn{fd: 7, loop: next, open: true}
		require.PanicsWithValue(t, "idleconn: descriptor 7 opened again while still tracked: "+msg,
			func() { k.OnOpen(reused) }, "same loop: %v", sameLoop)
		require.NotNil(t, f.slot(old), "the old connection is still tracked")
		require.Equal(t, 1, f.h.Stats().Tracked)
	}

	f := newFakeServer(t, &nopHandler{}, opts)
	l := &fakeLoop{h: &closeKeeper{Handler: f.h, keep: true}}
	openFake(f.h, l, 9)
	require.PanicsWithValue(t, "idleconn: descriptor 9 closed without OnClose: "+msg,
		func() { f.advance(200*time.Millisecond, l) })
}

// TestNotMadeByNew checks that a zero Handler says what is wrong before
// gnet starts any loop.
func TestNotMadeByNew(t *testing.T) {
	require.PanicsWithValue(t, "idleconn: Handler used without New", func() { new(Handler).OnBoot(gnet.Engine{}) })
}

// tickCounter is a wrapped handler whose OnTick asks for a given delay.
type tickCounter struct {
	gnet.BuiltinEventEngine
	delay  time.Duration
	action gnet.Action
	calls  int
}

func (c *tickCounter) OnTick() (time.Duration, gnet.Action) {
	c.calls++
	return c.delay, c.action
}

// TestTickPassThrough checks that OnTick is the wrapped handler's own: the
// reaper needs no ticker.
func TestTickPassThrough(t *testing.T) {
	user := &tickCounter{delay: time.Hour, action: gnet.Shutdown}
	f := newFakeServer(t, user, Options{Timeout: time.Second})
	d, action := f.h.OnTick()
	require.Equal(t, time.Hour, d)
	require.Equal(t, gnet.Shutdown, action)
	require.Equal(t, 1, user.calls)
}

// TestZeroAllocs checks that the data path, and opens, closes and reaper
// runs once the loop's tables are warm, allocate nothing.
func TestZeroAllocs(t *testing.T) {
	for _, kind := range []WheelKind{Hashed, Hierarchical} {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFakeServer(t, &nopHandler{}, Options{Timeout: time.Second, Wheel: kind})
			loops := []*fakeLoop{f.loop(), f.loop(), f.loop(), f.loop()}
			conns := make([]*fakeConn, 0, 4000)
			for i := range cap(conns) {
				conns = append(conns, openFake(f.h, loops[i%4], 10+i))
			}
			i := 0
			traffic := func() {
				i++
				f.h.OnTraffic(conns[i%len(conns)])
			}
			reopen := func() {
				i++
				c := conns[i%len(conns)]
				f.h.OnClose(c, nil)
				f.h.OnOpen(c)
			}
			run := func() {
				f.clk.t = f.clk.t.Add(f.h.cfg.tick)
				for _, l := range loops {
					require.NoError(t, f.h.loops.find(l).Run(context.Background()))
				}
				// Every connection hears often enough not to be reaped.
				for range 1000 {
					traffic()
				}
			}
			for range 200 {
				reopen()
				run()
			}
			assert.Zero(t, testing.AllocsPerRun(10000, traffic), "OnTraffic")
			assert.Zero(t, testing.AllocsPerRun(1000, reopen), "OnClose+OnOpen")
			assert.Zero(t, testing.AllocsPerRun(200, run), "reaper run")
			require.True(t, settled(f.h, len(conns)))
		})
	}
}

// TestIdleDue checks the deadline a re-armed timer gets from the epoch of
// its connection's last data: after the refresh that followed that epoch,
// or, for data stamped since the latest refresh, after the next tick; a
// stamp older than the ring counts from the oldest refresh remembered.
func TestIdleDue(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	fl := f.loop()
	c := openFake(f.h, fl, 3)
	for range 50 { // a refresh per tick, more than the ring holds
		f.advance(f.h.cfg.tick, fl)
		f.h.OnTraffic(c)
	}
	l := f.h.loops.all()[0]
	idle := f.h.cfg.idleTicks
	now := f.h.clock.Tick(f.clk.t)
	require.Equal(t, now, l.ring[l.epoch&l.mask], "the latest refresh saw this tick")
	require.Greater(t, l.epoch, l.mask)

	assert.Equal(t, now+1+idle, l.due(stamp{epoch: l.epoch}, idle, now), "data since the latest refresh")
	assert.Equal(t, now+idle, l.due(stamp{epoch: l.epoch - 1}, idle, now), "data before the latest refresh")
	assert.Equal(t, now-4+idle, l.due(stamp{epoch: l.epoch - 5}, idle, now))
	oldest := l.ring[(l.epoch-l.mask)&l.mask]
	assert.Equal(t, now-l.mask+idle, oldest+idle)
	assert.Equal(t, oldest+idle, l.due(stamp{epoch: l.epoch - l.mask - 1}, idle, now), "older than the ring")
	assert.Equal(t, oldest+idle, l.due(stamp{}, idle, now))
}

// TestShutdownWhileReaping checks that OnShutdown coming while a loop's
// runnable closes connections stops the run quietly: OnClose then finds
// the descriptor table dropped, which is no misuse. It also checks that a
// runnable queued before OnShutdown does nothing when it runs after.
func TestShutdownWhileReaping(t *testing.T) {
	var f *fakeServer
	opts := Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond}
	opts.OnReap = func(gnet.Conn, Reason) { f.h.OnShutdown(gnet.Engine{}) }
	f = newFakeServer(t, &nopHandler{}, opts)
	h := f.h
	l := f.loop()
	for fd := range 4 {
		openFake(h, l, 10+fd)
	}
	require.NotPanics(t, func() { f.advance(200*time.Millisecond, l) })
	require.Equal(t, uint64(1), h.Stats().Reaped(Idle), "the run stops at the shutdown")

	opts.OnReap = nil
	g := newFakeServer(t, &nopHandler{}, opts)
	gl := g.loop()
	openFake(g.h, gl, 3)
	g.clk.t = g.clk.t.Add(200 * time.Millisecond)
	g.h.wake(g.clk.t)
	require.Len(t, gl.queued, 1)
	g.h.OnShutdown(gnet.Engine{})
	require.NotPanics(t, gl.runQueued)
	require.Equal(t, engineCounts{}, countsOf(g.h))
}

// wakeNext returns the tick at which h's driver must look again after
// waking the loops at t.
func wakeNext(h *Handler, t time.Time) uint64 {
	next, _ := h.wake(t)
	return next
}

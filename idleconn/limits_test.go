package idleconn

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeAfter advances f's clock in steps of a quarter tick, waking the
// driver and running the loop at each as the real ones would, calling each
// (if not nil) at every step, until c closes or limit passes. It returns
// how long after the call c closed, or -1 if it did not.
func (f *fakeServer) closeAfter(c *fakeConn, l *fakeLoop, limit time.Duration, each func(elapsed time.Duration)) time.Duration {
	start := f.clk.t
	step := f.h.cfg.tick / 4
	for f.clk.t.Sub(start) < limit {
		f.clk.t = f.clk.t.Add(step)
		elapsed := f.clk.t.Sub(start)
		if each != nil {
			each(elapsed)
		}
		f.h.wake(f.clk.t)
		l.runQueued()
		if !c.open {
			return elapsed
		}
	}
	return -1
}

// every returns an each for closeAfter that sends c data every period.
func (f *fakeServer) every(c *fakeConn, period time.Duration) func(time.Duration) {
	var next time.Duration
	return func(elapsed time.Duration) {
		if elapsed >= next && c.open {
			f.h.OnTraffic(c)
			next = elapsed + period
		}
	}
}

// requireWithin checks a close time against a limit: never early, at most
// Resolution late.
func requireWithin(t *testing.T, h *Handler, got, limit time.Duration, what string) {
	t.Helper()
	require.GreaterOrEqual(t, got, limit, "%s: closed early (or never)", what)
	require.LessOrEqual(t, got, limit+h.Resolution(), "%s: closed later than Resolution after its limit", what)
}

// limitOpts are the options of the tests below: Resolution 20ms, a tick of
// 5ms.
var limitOpts = Options{Timeout: time.Second, Resolution: 20 * time.Millisecond}

// TestDeadline checks that a deadline closes a busy connection at its
// time, and that clearing or moving it works.
func TestDeadline(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	for _, offset := range []time.Duration{0, time.Millisecond, 2500 * time.Microsecond, 4999 * time.Microsecond} {
		f.clk.t = f.clk.t.Add(offset) // deadlines anywhere in a tick
		c := openFake(f.h, l, 3)
		require.True(t, f.h.SetDeadline(c, f.clk.t.Add(300*time.Millisecond)))
		got := f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond))
		requireWithin(t, f.h, got, 300*time.Millisecond, "deadline")
	}
	require.Equal(t, []Reason{Deadline, Deadline, Deadline, Deadline}, f.reap)
	require.Equal(t, uint64(4), f.h.Stats().Reaped(Deadline))

	// Cleared half way: the idle timeout (1s) applies again.
	c := openFake(f.h, l, 3)
	f.h.SetDeadline(c, f.clk.t.Add(100*time.Millisecond))
	got := f.closeAfter(c, l, 2*time.Second, func(elapsed time.Duration) {
		if elapsed == 50*time.Millisecond {
			f.h.SetDeadline(c, time.Time{})
		}
	})
	requireWithin(t, f.h, got, time.Second, "deadline cleared, idle")
	require.Equal(t, Idle, f.reap[len(f.reap)-1])

	// Moved later half way, and brought earlier again.
	c = openFake(f.h, l, 3)
	f.h.SetDeadline(c, f.clk.t.Add(100*time.Millisecond))
	start := f.clk.t
	got = f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		switch elapsed {
		case 50 * time.Millisecond:
			f.h.SetDeadline(c, start.Add(400*time.Millisecond))
		case 60 * time.Millisecond:
			f.h.SetDeadline(c, start.Add(200*time.Millisecond))
		}
	})
	requireWithin(t, f.h, got, 200*time.Millisecond, "deadline moved")

	// A deadline already past closes at the next run.
	c = openFake(f.h, l, 3)
	f.h.SetDeadline(c, f.clk.t.Add(-time.Hour))
	got = f.closeAfter(c, l, time.Second, nil)
	requireWithin(t, f.h, got, 0, "deadline past")
}

// TestIdleOverride checks SetIdleTimeout: longer, shorter and off, and
// the switch of a keep-alive HTTP server between a request in progress
// (idle off, a header deadline) and the wait between requests.
func TestIdleOverride(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	l := f.loop()
	for _, d := range []time.Duration{300 * time.Millisecond, 50 * time.Millisecond, 2 * time.Second} {
		c := openFake(f.h, l, 3)
		require.True(t, f.h.SetIdleTimeout(c, d))
		requireWithin(t, f.h, f.closeAfter(c, l, 3*time.Second, nil), d, "idle "+d.String())
		c = openFake(f.h, l, 3)
		f.h.SetIdleTimeout(c, d)
		// Data resets it: silent from 130ms on.
		got := f.closeAfter(c, l, 3*time.Second, func(elapsed time.Duration) {
			if elapsed <= 130*time.Millisecond && elapsed%(10*time.Millisecond) == 0 {
				f.h.OnTraffic(c)
			}
		})
		requireWithin(t, f.h, got, 130*time.Millisecond+d, "idle after data "+d.String())
	}
	c := openFake(f.h, l, 3)
	f.h.SetIdleTimeout(c, 0)
	require.Equal(t, -time.Duration(1), f.closeAfter(c, l, 3*time.Second, nil), "idle off")
	require.Zero(t, f.h.Stats().Timers, "a connection with no limit needs no timer")
	f.h.SetIdleTimeout(c, 100*time.Millisecond) // counts from now
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, nil), 100*time.Millisecond, "idle back on")

	// HTTP: the request's first byte comes at 30ms; a slowloris client
	// then trickles a byte every 10ms and never ends its header.
	slow, quick := openFake(f.h, l, 4), openFake(f.h, l, 5)
	start := f.clk.t
	got := f.closeAfter(slow, l, time.Second, func(elapsed time.Duration) {
		if elapsed >= 30*time.Millisecond && elapsed%(10*time.Millisecond) == 0 {
			f.h.OnTraffic(slow)
			if elapsed == 30*time.Millisecond {
				f.h.SetIdleTimeout(slow, 0)
				f.h.SetDeadline(slow, f.clk.t.Add(150*time.Millisecond))
			}
		}
		switch elapsed {
		case 30 * time.Millisecond: // quick's request starts
			f.h.OnTraffic(quick)
			f.h.SetIdleTimeout(quick, 0)
			f.h.SetDeadline(quick, f.clk.t.Add(150*time.Millisecond))
		case 60 * time.Millisecond: // and ends; keep-alive 300ms
			f.h.OnTraffic(quick)
			f.h.SetDeadline(quick, time.Time{})
			f.h.SetIdleTimeout(quick, 300*time.Millisecond)
		}
	})
	requireWithin(t, f.h, got, 180*time.Millisecond, "slowloris at its header deadline")
	require.Equal(t, Deadline, f.reap[len(f.reap)-1])
	// quick's keep-alive wait ends 300ms after its last data, at 60ms
	// (TestIdleOverrideBounds pins it).
	require.True(t, quick.open)
	f.closeAfter(quick, l, time.Second, nil)
	requireWithin(t, f.h, f.clk.t.Sub(start), 360*time.Millisecond, "keep-alive after the request")
	require.Equal(t, Idle, f.reap[len(f.reap)-1])
}

// TestIdleOverrideBounds pins the keep-alive close of TestIdleOverride's
// quick client exactly: idle 300ms counted from its last data.
func TestIdleOverrideBounds(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	l := f.loop()
	c := openFake(f.h, l, 5)
	f.h.OnTraffic(c)
	f.h.SetIdleTimeout(c, 0)
	f.h.SetDeadline(c, f.clk.t.Add(150*time.Millisecond))
	got := f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		if elapsed == 30*time.Millisecond {
			f.h.OnTraffic(c)
			f.h.SetDeadline(c, time.Time{})
			f.h.SetIdleTimeout(c, 300*time.Millisecond)
		}
	})
	requireWithin(t, f.h, got, 330*time.Millisecond, "keep-alive idle")
	require.Equal(t, []Reason{Idle}, f.reap)
}

// TestWriteStall checks the write stall timeout: pending data that does
// not drain closes the connection, pending data that drains or empties
// does not, however long it stays pending.
func TestWriteStall(t *testing.T) {
	opts := limitOpts
	opts.WriteStallTimeout = 100 * time.Millisecond
	f := newFakeServer(t, &nopHandler{}, opts)
	l := f.loop()

	// Stalled: data pending from the OnTraffic at 0 on, never drained,
	// while the client keeps sending and the server keeps writing.
	c := openFake(f.h, l, 3)
	c.out = 1000
	f.h.OnTraffic(c)
	got := f.closeAfter(c, l, time.Second, func(elapsed time.Duration) {
		if elapsed%(10*time.Millisecond) == 0 {
			c.out += 100
			f.h.OnTraffic(c)
		}
	})
	requireWithin(t, f.h, got, 100*time.Millisecond, "stalled")
	require.Equal(t, []Reason{WriteStall}, f.reap)

	// Draining slowly: some drains every 60ms, with no traffic at all.
	c = openFake(f.h, l, 3)
	c.out = 1000
	f.h.OnTraffic(c)
	got = f.closeAfter(c, l, 600*time.Millisecond, func(elapsed time.Duration) {
		if elapsed%(60*time.Millisecond) == 0 {
			c.out -= 10
		}
	})
	// Its last drain came at 600ms: stalled from there.
	require.Equal(t, -time.Duration(1), got, "draining")
	got = f.closeAfter(c, l, time.Second, nil)
	requireWithin(t, f.h, got, 100*time.Millisecond, "stalled after draining")
	require.Equal(t, WriteStall, f.reap[len(f.reap)-1])

	// Draining while the server writes more each time: seen by OnTraffic
	// looking before the handler writes.
	c = openFake(f.h, l, 3)
	c.out = 1000
	f.h.OnTraffic(c)
	h := f.h
	got = f.closeAfter(c, l, 600*time.Millisecond, func(elapsed time.Duration) {
		if elapsed%(20*time.Millisecond) == 0 {
			c.out -= 50 // the client read some
			h.OnTraffic(c)
			c.out += 100 // and the server wrote more: more pending than ever
		}
	})
	require.Equal(t, -time.Duration(1), got, "drained and refilled")
	require.NoError(t, l.Close(c))

	// Emptied: nothing pending, no stall however long.
	c = openFake(f.h, l, 3)
	c.out = 1000
	f.h.OnTraffic(c)
	got = f.closeAfter(c, l, 900*time.Millisecond, func(elapsed time.Duration) {
		if elapsed == 50*time.Millisecond {
			c.out = 0
		}
	})
	require.Equal(t, -time.Duration(1), got, "emptied")

	// Per connection: off, and on with another timeout.
	c.out = 1000
	f.h.SetWriteStallTimeout(c, 0)
	f.h.OnTraffic(c)
	require.Equal(t, -time.Duration(1), f.closeAfter(c, l, 500*time.Millisecond, f.every(c, 10*time.Millisecond)), "stall off")
	require.True(t, f.h.SetWriteStallTimeout(c, 200*time.Millisecond))
	got = f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond))
	requireWithin(t, f.h, got, 200*time.Millisecond, "stall per connection")
}

// TestLifetimeInterplay checks SetMaxLifetime and the lifetime against the
// other limits: the earliest wins, and its reason is given.
func TestLifetimeInterplay(t *testing.T) {
	opts := limitOpts
	opts.MaxLifetime = 300 * time.Millisecond
	f := newFakeServer(t, &nopHandler{}, opts)
	l := f.loop()

	c := openFake(f.h, l, 3)
	require.True(t, f.h.SetMaxLifetime(c, 500*time.Millisecond))
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)), 500*time.Millisecond, "longer lifetime")

	c = openFake(f.h, l, 3)
	f.closeAfter(c, l, 100*time.Millisecond, f.every(c, 10*time.Millisecond))
	f.h.SetMaxLifetime(c, 150*time.Millisecond) // counted from the open
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)), 50*time.Millisecond, "shorter lifetime")

	c = openFake(f.h, l, 3)
	f.closeAfter(c, l, 100*time.Millisecond, nil)
	f.h.SetMaxLifetime(c, 50*time.Millisecond) // already exceeded
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, nil), 0, "lifetime exceeded")
	require.Equal(t, []Reason{Lifetime, Lifetime, Lifetime}, f.reap)

	// Deadline after the lifetime: the lifetime wins; before: the deadline.
	c = openFake(f.h, l, 3)
	f.h.SetDeadline(c, f.clk.t.Add(400*time.Millisecond))
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)), 300*time.Millisecond, "lifetime before deadline")
	c = openFake(f.h, l, 3)
	f.h.SetDeadline(c, f.clk.t.Add(200*time.Millisecond))
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)), 200*time.Millisecond, "deadline before lifetime")
	// A write stall that would come after the lifetime.
	c = openFake(f.h, l, 3)
	f.h.SetWriteStallTimeout(c, 250*time.Millisecond)
	f.closeAfter(c, l, 100*time.Millisecond, f.every(c, 10*time.Millisecond))
	c.out = 10
	f.h.OnTraffic(c)
	requireWithin(t, f.h, f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)), 200*time.Millisecond, "lifetime before stall")
	// No lifetime: lives on.
	c = openFake(f.h, l, 3)
	f.h.SetMaxLifetime(c, 0)
	require.Equal(t, -time.Duration(1), f.closeAfter(c, l, time.Second, f.every(c, 10*time.Millisecond)))
	require.Equal(t, []Reason{Lifetime, Lifetime, Lifetime, Lifetime, Deadline, Lifetime}, f.reap)
}

// TestDriverSleeps checks that the driver has nothing to do, and so
// sleeps, while no timer is due: with no connection at all, and with
// connections none of which is due before its timer.
func TestDriverSleeps(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: 100 * time.Millisecond, Resolution: 20 * time.Millisecond})
	require.Equal(t, packwheel.MaxTick, wakeNext(f.h, f.clk.t), "no loop")
	l := f.loop()
	c := openFake(f.h, l, 3)
	require.True(t, nudged(f.h), "the first timer wakes the driver")
	due := f.h.clock.Tick(f.clk.t) + f.h.cfg.idleTicks
	require.Equal(t, due, wakeNext(f.h, f.clk.t))
	require.Empty(t, l.queued, "nothing to run before the timer is due")
	openFake(f.h, l, 4)
	require.False(t, nudged(f.h), "a later timer does not wake the driver")

	// Data needs one refresh at a later tick, then nothing.
	f.clk.t = f.clk.t.Add(f.h.cfg.tick)
	f.h.OnTraffic(c)
	require.True(t, nudged(f.h))
	now := f.h.clock.Tick(f.clk.t)
	require.Equal(t, now+1, wakeNext(f.h, f.clk.t))
	l.runQueued()
	f.h.OnTraffic(c) // same tick: the epoch stays busy
	f.clk.t = f.clk.t.Add(f.h.cfg.tick)
	require.Equal(t, now+2, wakeNext(f.h, f.clk.t))
	l.runQueued()
	require.Equal(t, due, wakeNext(f.h, f.clk.t), "asleep until the first timer")
	require.Empty(t, l.queued)

	// Everything closed: asleep for good.
	require.NoError(t, l.Close(c))
	f.advance(200*time.Millisecond, l)
	require.Zero(t, f.h.Stats().Tracked)
	require.Equal(t, packwheel.MaxTick, wakeNext(f.h, f.clk.t))
}

// TestMaxConns checks that a connection beyond MaxConns is closed at once,
// counted and passed to OnRefuse, and that the wrapped handler hears
// nothing of it.
func TestMaxConns(t *testing.T) {
	user := &countingHandler{}
	var refused []int
	f := newFakeServer(t, user, Options{Timeout: time.Second, MaxConns: 2, OnRefuse: func(c gnet.Conn) { refused = append(refused, c.Fd()) }})
	l := f.loop()
	a, b := openFake(f.h, l, 3), openFake(f.h, l, 4)
	c := &fakeConn{fd: 5, loop: l, open: true}
	_, action := f.h.OnOpen(c)
	require.Equal(t, gnet.Close, action)
	require.NoError(t, l.Close(c)) // as gnet does for the action
	require.Equal(t, []int{5}, refused)
	require.Equal(t, 2, user.opens)
	require.Zero(t, user.closes, "the refused connection's close is not passed on")
	require.Equal(t, uint64(1), f.h.Stats().Refused)
	require.True(t, settled(f.h, 2))

	require.NoError(t, l.Close(a))
	d := openFake(f.h, l, 5)
	require.True(t, f.h.Untrack(d), "a freed place takes a new connection")
	e := &fakeConn{fd: 6, loop: l, open: true}
	_, action = f.h.OnOpen(e)
	require.Equal(t, gnet.Close, action, "an untracked connection still counts")
	require.NoError(t, l.Close(e))
	require.Equal(t, 3, user.opens)
	require.Equal(t, 1, user.closes)
	_ = b
}

// TestMaxUnsent checks that each connection tracked has the kernel's
// bound on its unsent bytes set as it opens, to MaxUnsent or its default,
// and left alone with -1 and for a connection refused.
// TestMaxUnsentNetwork reads the bound from outside.
func TestMaxUnsent(t *testing.T) {
	for _, tc := range []struct{ opt, want int }{{0, DefaultMaxUnsent}, {4096, 4096}, {-1, 0}} {
		f := newFakeServer(t, &nopHandler{}, Options{Timeout: time.Second, MaxUnsent: tc.opt, MaxConns: 1})
		l := f.loop()
		openFake(f.h, l, 3)
		_, action := f.h.OnOpen(&fakeConn{fd: 4, loop: l, open: true})
		require.Equal(t, gnet.Close, action, "MaxConns refuses the second")
		want := map[int]int{3: tc.want}
		if tc.want == 0 {
			want = map[int]int{}
		}
		require.Equal(t, want, f.unsent, "MaxUnsent %d", tc.opt)
	}
}

// countingHandler counts the opens and closes it hears of.
type countingHandler struct {
	gnet.BuiltinEventEngine
	opens, closes int
}

func (h *countingHandler) OnOpen(gnet.Conn) ([]byte, gnet.Action) {
	h.opens++
	return nil, gnet.None
}

func (h *countingHandler) OnClose(gnet.Conn, error) gnet.Action {
	h.closes++
	return gnet.None
}

// TestCloseIdle checks that CloseIdle closes exactly the connections idle
// for the duration given, with nothing pending and no deadline, on every
// loop.
func TestCloseIdle(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, Options{Timeout: time.Second, Resolution: 20 * time.Millisecond})
	l1, l2 := f.loop(), f.loop()
	idle1, idle2 := openFake(f.h, l1, 3), openFake(f.h, l2, 4)
	recent, pending, request := openFake(f.h, l1, 5), openFake(f.h, l2, 6), openFake(f.h, l1, 7)
	untracked := openFake(f.h, l2, 8)
	f.h.Untrack(untracked)
	pending.out = 10
	f.h.SetDeadline(request, f.clk.t.Add(time.Hour))
	f.advance(200*time.Millisecond, l1, l2)
	f.h.OnTraffic(recent)
	f.advance(60*time.Millisecond, l1, l2)

	f.h.CloseIdle(100 * time.Millisecond)
	l1.runQueued()
	l2.runQueued()
	for _, c := range []*fakeConn{idle1, idle2} {
		assert.False(t, c.open, "fd %d", c.fd)
	}
	for _, c := range []*fakeConn{recent, pending, request, untracked} {
		assert.True(t, c.open, "fd %d", c.fd)
	}
	require.Equal(t, uint64(2), f.h.Stats().Reaped(Shed))
	require.Equal(t, []Reason{Shed, Shed}, f.reap)

	f.h.CloseIdle(0) // all not busy
	l1.runQueued()
	l2.runQueued()
	assert.False(t, recent.open)
	assert.True(t, pending.open)
	assert.True(t, request.open)
	require.True(t, settled(f.h, 2))
}

// TestLimitsMisuse checks that every misuse is reported with the package's
// message before anything changes.
func TestLimitsMisuse(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	before, beforeLim := *f.slot(c), *f.slot(c).lim()
	for _, tc := range []struct {
		msg  string
		call func()
	}{
		{"idleconn: SetIdleTimeout: negative duration -1ns (zero turns the limit off)", func() { f.h.SetIdleTimeout(c, -1) }},
		{"idleconn: SetWriteStallTimeout: negative duration -1s (zero turns the limit off)", func() { f.h.SetWriteStallTimeout(c, -time.Second) }},
		{"idleconn: SetMaxLifetime: negative duration -1ms (zero turns the limit off)", func() { f.h.SetMaxLifetime(c, -time.Millisecond) }},
		{"idleconn: CloseIdle: negative duration -1s", func() { f.h.CloseIdle(-time.Second) }},
	} {
		require.PanicsWithValue(t, tc.msg, tc.call)
		require.Equal(t, beforeLim, *f.slot(c).lim())
		require.Equal(t, before.pend, f.slot(c).pend)
		require.Equal(t, before.flags, f.slot(c).flags)
		require.Equal(t, before.timer.Deadline(), f.slot(c).timer.Deadline())
		require.Empty(t, l.queued)
	}
	// A connection not tracked: every call says so and changes nothing.
	require.NoError(t, l.Close(c))
	require.False(t, f.h.SetIdleTimeout(c, time.Second))
	require.False(t, f.h.SetDeadline(c, f.clk.t))
	require.False(t, f.h.SetWriteStallTimeout(c, time.Second))
	require.False(t, f.h.SetMaxLifetime(c, time.Second))
	require.Equal(t, engineCounts{Loops: 1}, countsOf(f.h))

	for _, tc := range []struct {
		opts Options
		err  string
	}{
		{Options{Timeout: time.Second, WriteStallTimeout: -1}, "idleconn: WriteStallTimeout must not be negative (zero means no limit)"},
	} {
		_, err := New(&nopHandler{}, tc.opts)
		assert.EqualError(t, err, tc.err)
	}
}

// udpConn is what gnet passes OnTraffic on a UDP engine: a connection with
// the listener's descriptor, never opened.
type udpConn struct{ fakeConn }

func (*udpConn) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// TestUDPRefused checks that a UDP engine is refused clearly rather than
// tracked silently never.
func TestUDPRefused(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	c := &udpConn{fakeConn{fd: 3, loop: f.loop()}}
	require.PanicsWithValue(t, "idleconn: a UDP engine has no connections to close; idleconn.Handler serves TCP and Unix-socket engines only",
		func() { f.h.OnTraffic(c) })
}

// TestLimitsZeroAllocs checks that every per-connection call, and the data
// path with a write stall timeout on, allocate nothing once warm.
func TestLimitsZeroAllocs(t *testing.T) {
	opts := limitOpts
	opts.WriteStallTimeout = time.Second
	f := newFakeServer(t, &nopHandler{}, opts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	f.advance(100*time.Millisecond, l)
	i := 0
	for name, call := range map[string]func(){
		"SetIdleTimeout":       func() { f.h.SetIdleTimeout(c, time.Duration(i%3)*time.Second) },
		"SetDeadline":          func() { f.h.SetDeadline(c, f.clk.t.Add(time.Duration(i%5)*time.Second)) },
		"SetWriteStallTimeout": func() { f.h.SetWriteStallTimeout(c, time.Duration(i%3)*time.Second) },
		"SetMaxLifetime":       func() { f.h.SetMaxLifetime(c, time.Duration(i%3)*time.Second) },
		"Touch":                func() { f.h.Touch(c) },
		"OnTraffic with stall": func() { c.out = int32(i % 3 * 100); f.h.OnTraffic(c) },
	} {
		call() // warm
		assert.Zero(t, testing.AllocsPerRun(1000, func() { i++; call() }), name)
	}
}

// queuedUntil is a fake kernel queue's bytes at elapsed: a lot until
// until, and none from then.
func queuedUntil(elapsed, until time.Duration) uint64 {
	if elapsed < until {
		return 1 << 20
	}
	return 0
}

// TestIdleLooksAtKernelQueue checks an Idle close's look at the kernel's
// send queue (idleLook): an empty queue closes plainly at the idle
// timeout; a queue whose peer acknowledges nothing more starts the
// timeout over once and then resets; one whose peer keeps acknowledging
// some keeps the connection open until it empties, and then the close is
// plain, or until the peer stops, and then it resets a timeout later;
// output in gnet's buffer resets at once, as before; a peer that has sent
// data since the timeout last ran out, but acknowledged nothing, is reset
// when it runs out again; and a connection closing after flush, whose
// idle timeout was turned on again, is closed plainly at it, its linger
// untouched (a look that wrote its mark into limits.linger closed it for
// Linger). With MinDrainRate set, a peer that reads less than that rate
// over a timeout is reset as one that reads nothing, and one that keeps
// up is not, nor one that reads all it is sent, a heartbeat's bytes, below
// the rate.
func TestIdleLooksAtKernelQueue(t *testing.T) {
	const timeout = time.Second
	for _, tc := range []struct {
		name  string
		open  func(f *fakeServer, c *fakeConn) // after the open, if not nil
		each  func(f *fakeServer, c *fakeConn, elapsed time.Duration)
		close time.Duration // when the connection closes, within Resolution
		reset bool
		rate  int // Options.MinDrainRate
	}{
		{"empty", nil, nil, timeout, false, 0},
		{"never read", nil, func(f *fakeServer, c *fakeConn, _ time.Duration) {
			f.queue[c.fd] = kernelQueue{acked: 1000, queued: 1 << 20}
		}, 2 * timeout, true, 0},
		{"read slowly, then drained", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			// Some acknowledged every 300 ms until 3.5 s, and then all.
			f.queue[c.fd] = kernelQueue{acked: uint64(elapsed / (300 * time.Millisecond)), queued: queuedUntil(elapsed, 3500*time.Millisecond)}
		}, 4 * timeout, false, 0},
		{"read, then stopped", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			acked := uint64(1000) // and 2,000 from 1.5 s
			if elapsed >= 1500*time.Millisecond {
				acked = 2000
			}
			f.queue[c.fd] = kernelQueue{acked: acked, queued: 1 << 20}
		}, 3 * timeout, true, 0},
		{"in gnet's buffer", nil, func(f *fakeServer, c *fakeConn, _ time.Duration) {
			c.out = 100
			f.queue[c.fd] = kernelQueue{acked: 1000, queued: 1 << 20}
		}, timeout, true, 0},
		{"data since, none read", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			f.queue[c.fd] = kernelQueue{acked: 1000, queued: 1 << 20}
			if elapsed == 1500*time.Millisecond {
				f.h.OnTraffic(c)
			}
		}, 2500 * time.Millisecond, true, 0},
		{"closing after flush", func(f *fakeServer, c *fakeConn) {
			f.recordShutdowns(false)
			require.True(t, f.h.CloseAfterFlush(c))
			require.True(t, f.h.SetIdleTimeout(c, timeout))
			f.queue[c.fd] = kernelQueue{queued: 100}
		}, nil, timeout, false, 0},
		{"read below the drain rate", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			// 999 bytes a timeout, where the rate asks 1,000.
			f.queue[c.fd] = kernelQueue{acked: 999 * uint64(elapsed/timeout), queued: 1 << 20}
		}, 2 * timeout, true, 1000},
		{"a heartbeat, read whole, below the drain rate", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			// 50 bytes in the queue at each look, and 60 more read by
			// the next: all it was sent, far below the rate.
			f.queue[c.fd] = kernelQueue{acked: 60 * uint64(elapsed/timeout), queued: min(queuedUntil(elapsed, 3500*time.Millisecond), 50)}
		}, 4 * timeout, false, 1000},
		{"read above the drain rate, then drained", nil, func(f *fakeServer, c *fakeConn, elapsed time.Duration) {
			// 1,100 bytes a timeout: a timeout runs out a tick late.
			f.queue[c.fd] = kernelQueue{acked: 1100 * uint64(elapsed/timeout), queued: queuedUntil(elapsed, 3500*time.Millisecond)}
		}, 4 * timeout, false, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := limitOpts
			opts.MinDrainRate = tc.rate
			f := newFakeServer(t, &nopHandler{}, opts)
			l := f.loop()
			c := openFake(f.h, l, 3)
			if tc.open != nil {
				tc.open(f, c)
			}
			var each func(time.Duration)
			if tc.each != nil {
				each = func(elapsed time.Duration) { tc.each(f, c, elapsed) }
			}
			requireWithin(t, f.h, f.closeAfter(c, l, 5*time.Second, each), tc.close, tc.name)
			require.Equal(t, []Reason{Idle}, f.reap)
			if tc.reset {
				require.Equal(t, []int{3}, f.aborted, "reset")
			} else {
				require.Empty(t, f.aborted, "plain")
			}
		})
	}
}

// TestAbortReasons checks which closes are resets (Reason): those whose
// peer does not read what it is sent, an idle one's if output is pending,
// or that free memory; a close for any other reason stays plain, so that
// what was written before it arrives. TestAbortFreesKernelMemory shows
// what a reset frees.
func TestAbortReasons(t *testing.T) {
	abort := map[Reason]bool{WriteStall: true, SlowDrain: true, OutputFull: true, InputFull: true, OverBudget: true}
	for why := Reason(1); int(why) <= numReasons; why++ {
		for _, out := range []int32{0, 1} {
			f := newFakeServer(t, &nopHandler{}, Options{Timeout: time.Second})
			fl := f.loop()
			c := openFake(f.h, fl, 3)
			c.out = out
			f.h.loops.find(fl).reaping(f.h.table.lookup(3), why)
			want := []int(nil)
			if abort[why] || why == Idle && out > 0 {
				want = []int{3}
			}
			require.Equal(t, want, f.aborted, "%v, %d bytes pending", why, out)
			require.Equal(t, []Reason{why}, f.reap, "OnReap hears of it")
		}
	}
}

// setterModel is what TestSettersRandom expects of one connection: the
// time its idle timeout counts from and that timeout (0 for off), its
// deadline (0 for none), its lifetime from its open (0 for none), and
// when a setter last changed any of them.
type setterModel struct {
	last, idle, deadline, life, changed time.Duration
}

// due returns when the model's first limit is reached, and the reasons
// whose limit is reached by then or by at, whichever is later.
func (m *setterModel) due(openAt, at time.Duration) (time.Duration, []Reason) {
	limits := []struct {
		on  bool
		at  time.Duration
		why Reason
	}{{m.idle != 0, m.last + m.idle, Idle}, {m.deadline != 0, m.deadline, Deadline}, {m.life != 0, openAt + m.life, Lifetime}}
	due := time.Duration(1 << 62)
	for _, l := range limits {
		if l.on {
			due = min(due, l.at)
		}
	}
	var whys []Reason
	for _, l := range limits {
		if l.on && l.at <= max(due, at) {
			whys = append(whys, l.why)
		}
	}
	return due, whys
}

// TestSettersRandom checks the per-connection setters against a model over
// random calls on the sim's fake clock: SetIdleTimeout, SetDeadline,
// SetMaxLifetime and Touch, on clients busy, silent, or busy and then
// silent. A connection's limits are its idle timeout, counted from its
// last data, Touch or SetIdleTimeout; its deadline; and its lifetime,
// counted from its open. It is closed no sooner than the first of them,
// for a reason whose limit it reached, and, with the loop on time, no
// later than three ticks and a step (TestReapBounds's lateness) after
// that or after the setter that made it due, whichever is later; a
// setter on a closed connection reports false. The setters move limits
// later without touching the wheel, which expire re-arms for, and earlier
// by re-arming: the state the model checks. Six deliberate bugs fail it
// (internal/mutants, "set" and "touch-"): a setter that does not re-arm
// (three), SetIdleTimeout or Touch not restarting the count, and a
// deadline rounded down to its tick.
func TestSettersRandom(t *testing.T) {
	const step = 100 * time.Microsecond
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 40 {
		lagged := round%2 == 1
		timeout, opts := simOptions(rng)
		if rng.IntN(2) == 0 {
			opts.MaxLifetime = timeout + time.Duration(rng.Int64N(int64(4*timeout)))
		}
		t.Run(fmt.Sprintf("round=%d/lagged=%v", round, lagged), func(t *testing.T) {
			s := newSim(t, rng, opts)
			tick, res := s.h.cfg.tick, s.h.cfg.resolution
			late := 3*tick + step
			within := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d) + 1)) }
			models := make([]setterModel, 24)
			for i := range models {
				c := &simConn{openAt: within(timeout), closeAt: -1, gap: timeout / 4}
				switch i % 3 {
				case 0: // busy throughout
					c.quietAt = 1 << 62
				case 1: // busy for a while, then silent
					c.quietAt = c.openAt + within(3*timeout)
				}
				s.conns = append(s.conns, c)
				models[i] = setterModel{last: c.openAt, idle: timeout, life: opts.MaxLifetime}
			}
			s.each = func(now time.Duration) {
				for i, c := range s.conns {
					if c.fakeConn == nil {
						continue
					}
					m := &models[i]
					if c.open {
						m.last = max(m.last, c.lastData)
					}
					if c.open && !lagged {
						due, _ := m.due(c.openAt, now)
						require.Less(t, now, max(due, m.changed)+late+step, "conn %d not closed: %+v", i, *m)
					}
					if rng.IntN(400) != 0 {
						continue
					}
					var ok bool
					switch rng.IntN(4) {
					case 0:
						d := time.Duration(0)
						if rng.IntN(4) != 0 {
							d = res + within(3*timeout)
						}
						ok = s.h.SetIdleTimeout(c.fakeConn, d)
						if ok {
							m.idle, m.last = d, now
						}
					case 1:
						at := time.Time{}
						if rng.IntN(4) != 0 {
							at = s.start.Add(now - timeout/2 + within(3*timeout))
						}
						ok = s.h.SetDeadline(c.fakeConn, at)
						if ok {
							m.deadline = 0
							if !at.IsZero() {
								m.deadline = max(at.Sub(s.start), 1)
							}
						}
					case 2:
						d := time.Duration(0)
						if rng.IntN(4) != 0 {
							d = within(5 * timeout)
						}
						ok = s.h.SetMaxLifetime(c.fakeConn, d)
						if ok {
							m.life = d
						}
					default: // Touch, which reports nothing
						s.h.Touch(c.fakeConn)
						if c.open {
							m.last, m.changed = now, now
						}
						continue
					}
					require.Equal(t, c.open, ok, "conn %d: a setter's report", i)
					if ok {
						m.changed = now
					}
				}
			}
			s.run(20*timeout, step, simLag(rng, lagged, res))

			for i, c := range s.conns {
				if c.closeAt < 0 {
					continue
				}
				m := &models[i]
				due, whys := m.due(c.openAt, c.reapedAt)
				require.GreaterOrEqual(t, c.reapedAt, due, "conn %d closed early: %+v, %+v", i, c, *m)
				require.Contains(t, whys, c.why, "conn %d closed for %v: %+v, %+v", i, c.why, c, *m)
			}
		})
	}
}

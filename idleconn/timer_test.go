package idleconn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firings records when a timer's function ran, and with which connection.
type firings struct {
	f     *fakeServer
	start time.Time
	at    []time.Duration
	conns []gnet.Conn
}

func (r *firings) fn(c gnet.Conn) {
	r.at = append(r.at, r.f.clk.t.Sub(r.start))
	r.conns = append(r.conns, c)
}

// TestTimerOnce checks a one-shot connection timer: due after its delay,
// never before, and within Resolution; re-armed and stopped.
func TestTimerOnce(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	for _, d := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 333 * time.Millisecond} {
		r := &firings{f: f, start: f.clk.t}
		var tm Timer
		require.True(t, f.h.ConnTimer(c, &tm, d, 0, r.fn))
		f.closeAfter(c, l, 500*time.Millisecond, f.every(c, 10*time.Millisecond))
		require.Len(t, r.at, 1, "delay %v", d)
		requireWithin(t, f.h, r.at[0], d, "timer "+d.String())
		require.Equal(t, []gnet.Conn{c}, r.conns)
		require.False(t, tm.Stop(), "fired")
	}

	r := &firings{f: f, start: f.clk.t}
	var tm Timer
	f.h.ConnTimer(c, &tm, 100*time.Millisecond, 0, r.fn)
	f.h.ConnTimer(c, &tm, 200*time.Millisecond, 0, r.fn) // re-armed
	f.closeAfter(c, l, 500*time.Millisecond, f.every(c, 10*time.Millisecond))
	require.Len(t, r.at, 1)
	requireWithin(t, f.h, r.at[0], 200*time.Millisecond, "re-armed")

	r.at = nil
	f.h.ConnTimer(c, &tm, 100*time.Millisecond, 0, r.fn)
	require.True(t, tm.Stop())
	require.False(t, tm.Stop())
	f.closeAfter(c, l, 300*time.Millisecond, f.every(c, 10*time.Millisecond))
	require.Empty(t, r.at, "stopped")
}

// TestTimerFixedRate checks that a periodic timer keeps its rate when its
// loop runs late: it fires once per period counted from when each was due,
// catching up on the periods missed.
func TestTimerFixedRate(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	r := &firings{f: f, start: f.clk.t}
	var tm Timer
	require.True(t, f.h.ConnTimer(c, &tm, 50*time.Millisecond, 50*time.Millisecond, r.fn))
	// The loop runs only every 120ms for half a second, then on time.
	for f.clk.t.Sub(r.start) < 1010*time.Millisecond {
		f.clk.t = f.clk.t.Add(f.h.cfg.tick)
		f.h.OnTraffic(c)
		if el := f.clk.t.Sub(r.start); el > 500*time.Millisecond || el%(120*time.Millisecond) < f.h.cfg.tick {
			f.h.wake(f.clk.t)
			l.runQueued()
		}
	}
	require.Len(t, r.at, 20, "one firing per period due by 1s: %v", r.at)
	for i, at := range r.at {
		require.GreaterOrEqual(t, at, time.Duration(i+1)*50*time.Millisecond, "firing %d early", i)
	}
	for i, at := range r.at[12:] { // caught up: on time again
		requireWithin(t, f.h, at, time.Duration(i+13)*50*time.Millisecond, "firing after catching up")
	}
	require.True(t, tm.Stop())
}

// TestTimerTiedToConn checks that a connection's timers never fire once it
// has closed, even when its descriptor is reused, and that a loop timer
// fires with no connection.
func TestTimerTiedToConn(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	old := openFake(f.h, l, 3)
	r := &firings{f: f, start: f.clk.t}
	var once, every Timer
	f.h.ConnTimer(old, &once, 100*time.Millisecond, 0, r.fn)
	f.h.ConnTimer(old, &every, 20*time.Millisecond, 20*time.Millisecond, r.fn)
	f.advance(50*time.Millisecond, l)
	fired := len(r.at)
	require.Positive(t, fired)
	require.NoError(t, l.Close(old))
	reused := openFake(f.h, l, 3)
	f.advance(300*time.Millisecond, l)
	require.Len(t, r.at, fired, "fired after its connection closed")
	for _, c := range r.conns {
		require.Same(t, old, c)
	}
	require.True(t, reused.open)
	require.False(t, f.h.ConnTimer(old, &once, 0, 0, r.fn), "a closed connection takes no timer")

	lr := &firings{f: f, start: f.clk.t}
	var flush Timer
	require.True(t, f.h.LoopTimer(l, &flush, 0, 100*time.Millisecond, lr.fn))
	f.advance(450*time.Millisecond, l)
	require.Len(t, lr.at, 5)
	require.Equal(t, []gnet.Conn{nil, nil, nil, nil, nil}, lr.conns)
}

// TestTimerStoppedAtItsTick checks that a timer stopped, or re-armed for
// later, by the callback of another timer due at the same tick does not
// fire at that tick, and that Stop reports it was armed: of three timers
// due together, the first to fire stops the next and re-arms the last a
// second later. When a loop took a tick's timers out of its wheel in a
// batch before firing them, all three fired.
func TestTimerStoppedAtItsTick(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	r := &firings{f: f, start: f.clk.t}
	var timers [3]Timer
	stops := 0
	for i := range timers {
		require.True(t, f.h.ConnTimer(c, &timers[i], 50*time.Millisecond, 0, func(c gnet.Conn) {
			r.fn(c)
			if len(r.at) > 1 {
				return
			}
			if timers[(i+1)%3].Stop() {
				stops++
			}
			require.True(t, f.h.ConnTimer(c, &timers[(i+2)%3], time.Second, 0, r.fn))
		}))
	}
	f.advance(500*time.Millisecond, l)
	require.Len(t, r.at, 1, "only the first fired")
	require.Equal(t, 1, stops, "Stop found the stopped timer armed")
	armed := 0
	for i := range timers {
		if timers[i].Stop() {
			armed++
		}
	}
	require.Equal(t, 1, armed, "the re-armed timer waits for its new time")
}

// TestTimerMisuse checks that misuse is reported with the package's message
// before anything changes.
func TestTimerMisuse(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l1, l2 := f.loop(), f.loop()
	c1, c2 := openFake(f.h, l1, 3), openFake(f.h, l2, 4)
	nop := func(gnet.Conn) {}
	var tm Timer
	for _, tc := range []struct {
		msg  string
		call func()
	}{
		{"idleconn: ConnTimer: negative delay -1ns", func() { f.h.ConnTimer(c1, &tm, -1, 0, nop) }},
		{"idleconn: ConnTimer: negative period -1s (zero means once)", func() { f.h.ConnTimer(c1, &tm, 0, -time.Second, nop) }},
		{"idleconn: ConnTimer: nil function", func() { f.h.ConnTimer(c1, &tm, 0, 0, nil) }},
		{"idleconn: LoopTimer: negative delay -1ns", func() { f.h.LoopTimer(l1, &tm, -1, 0, nop) }},
	} {
		require.PanicsWithValue(t, tc.msg, tc.call)
		require.Nil(t, tm.l, "nothing armed")
	}
	require.True(t, f.h.ConnTimer(c1, &tm, time.Second, 0, nop))
	require.PanicsWithValue(t, "idleconn: Timer armed on another event loop; stop it there first",
		func() { f.h.ConnTimer(c2, &tm, time.Second, 0, nop) })
	require.Same(t, c1, tm.c, "still armed for c1")
	require.True(t, tm.Stop())
	require.True(t, f.h.ConnTimer(c2, &tm, time.Second, 0, nop), "stopped, it may move")
	f.h.Untrack(c2)
	require.False(t, f.h.ConnTimer(c2, new(Timer), 0, 0, nop), "an untracked connection takes no timer")

	f.h.OnShutdown(gnet.Engine{})
	require.False(t, tm.Stop(), "its engine stopped")
	require.False(t, f.h.LoopTimer(l1, &tm, 0, 0, nop), "its engine stopped")
	require.False(t, tm.Stop(), "armed nothing")
}

// TestTimerZeroAllocs checks that arming, re-arming (ConnTimer and
// LoopTimer), stopping and firing timers allocate nothing once warm.
func TestTimerZeroAllocs(t *testing.T) {
	f := newFakeServer(t, &nopHandler{}, limitOpts)
	l := f.loop()
	c := openFake(f.h, l, 3)
	timers := make([]Timer, 64)
	n := 0
	fn := func(gnet.Conn) { n++ }
	i := 0
	arm := func() {
		i++
		f.h.ConnTimer(c, &timers[i%64], time.Duration(i%7)*time.Millisecond, time.Duration(i%2)*10*time.Millisecond, fn)
	}
	armLoop := func() {
		i++
		f.h.LoopTimer(l, &timers[i%64], time.Duration(i%7)*time.Millisecond, time.Duration(i%2)*10*time.Millisecond, fn)
	}
	stop := func() { i++; timers[i%64].Stop() }
	run := func() {
		f.clk.t = f.clk.t.Add(f.h.cfg.tick)
		f.h.OnTraffic(c)
		f.h.wake(f.clk.t)
		l.runQueued()
	}
	for range 500 {
		arm()
		run()
	}
	l.queued = make([]gnet.Runnable, 0, 16) // the fake loop's queue, warm
	assert.Zero(t, testing.AllocsPerRun(1000, arm), "arm and re-arm")
	assert.Zero(t, testing.AllocsPerRun(1000, armLoop), "arm and re-arm on the loop")
	assert.Zero(t, testing.AllocsPerRun(1000, stop), "stop")
	for range 64 {
		arm()
	}
	assert.Zero(t, testing.AllocsPerRun(200, run), "fire")
	require.Positive(t, n)
}

// delayServer answers "late\n" 50ms after each line it receives, from a
// connection timer, and counts a loop timer's ticks.
type delayServer struct {
	echoServer
	h     *Handler
	flush Timer
	ticks int // touched only on the loop
}

type delayState struct{ reply Timer }

func (s *delayServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&delayState{})
	return nil, gnet.None
}

func (s *delayServer) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Next(-1)
	s.h.ConnTimer(c, &c.Context().(*delayState).reply, 50*time.Millisecond, 0, func(c gnet.Conn) {
		_, _ = c.Write([]byte("late\n"))
	})
	return gnet.None
}

// TestTimerNetwork runs timers on a real gnet server: a reply sent by a
// connection timer comes no earlier than its delay, and a loop timer armed
// from a runnable fires periodically.
func TestTimerNetwork(t *testing.T) {
	t.Parallel() // never early, and five loop ticks within 2 s
	s := &delayServer{}
	h, err := New(s, Options{Timeout: 5 * time.Second, Resolution: 20 * time.Millisecond})
	require.NoError(t, err)
	s.h = h
	addr := serve(t, &s.echoServer, h, 1)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	rd := bufio.NewReader(c)
	for range 3 {
		start := time.Now()
		_, err = c.Write([]byte("x\n"))
		require.NoError(t, err)
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "late\n", line)
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	}
	loops := h.loops.all()
	require.Len(t, loops, 1)
	counted := make(chan int)
	require.NoError(t, loops[0].el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		h.LoopTimer(loops[0].el, &s.flush, 0, 20*time.Millisecond, func(gnet.Conn) {
			if s.ticks++; s.ticks == 5 {
				s.flush.Stop()
				counted <- s.ticks
			}
		})
		return nil
	})))
	select {
	case n := <-counted:
		require.Equal(t, 5, n)
	case <-time.After(2 * time.Second):
		t.Fatal("the loop timer did not fire five times")
	}
}

// envTimerPanic makes TestTimerPanic's child serve and panic.
const envTimerPanic = "IDLECONN_TIMER_PANIC"

// panicServer arms, for each connection's first data, a timer whose
// function panics.
type panicServer struct {
	echoServer
	h *Handler
}

func (s *panicServer) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Next(-1)
	s.h.ConnTimer(c, new(Timer), 10*time.Millisecond, 0, func(gnet.Conn) { panic("boom from a timer") })
	return gnet.None
}

// TestTimerPanic checks, in a child process, that a timer function that
// panics does what a gnet handler that panics does: gnet recovers neither,
// and the process exits with the panic.
func TestTimerPanic(t *testing.T) {
	if os.Getenv(envTimerPanic) != "" {
		s := &panicServer{}
		h, err := New(s, Options{Timeout: 5 * time.Second})
		require.NoError(t, err)
		s.h = h
		addr := serve(t, &s.echoServer, h, 1)
		fmt.Println("ADDR", addr)
		time.Sleep(10 * time.Second) // the panic ends the process first
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestTimerPanic$")
	cmd.Env = append(os.Environ(), envTimerPanic+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	require.NotEmpty(t, addr, "the child did not serve: %s", &stderr)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Contains(t, stderr.String(), "panic: boom from a timer")
}

// timerModel is what TestTimersRandom expects of one Timer: armed for
// the firings at base, base+period, base+2·period..., the next being the
// k-th; period is 0 for a one-shot timer and otherwise at least a tick.
// conn is the connection it is tied to, -1 for a loop timer.
type timerModel struct {
	armed        bool
	base, period time.Duration
	k            int
	conn         int
	fired        uint64 // the tick it last fired at, plus one; 0 for never
}

func (m *timerModel) next() time.Duration { return m.base + time.Duration(m.k)*m.period }

// TestTimersRandom checks Timers against a model over random arming,
// re-arming and stopping, on the sim's fake clock, from the test and from
// the timers' own callbacks, loop timers and timers tied to connections
// some of which the idle timeout closes: a timer armed at a with delay d
// and period p fires for the times a+d, a+d+p, a+d+2p..., each at the
// first tick that begins at or after it or later, never before, so that
// its rate does not drift whatever the tick; a period shorter than a tick
// counts as a tick. It never fires once stopped or re-armed for another
// time, nor once its connection has closed, even for a new connection on
// its descriptor, which it must not close either. With the loop on time,
// each firing comes within a tick and a step of its time; with the loop
// late, only the lower bound holds.
//
// Three deliberate bugs fail it (internal/mutants, "timer-"): a period
// that drifts by half a tick, a firing due at the tick before its time,
// and a Stop that does not stop. Before it, each period was rounded up
// to whole ticks, and a 110 ms period at 25 ms ticks fired every 125 ms.
func TestTimersRandom(t *testing.T) {
	const step = 100 * time.Microsecond
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 20 {
		lagged := round%2 == 1
		timeout, opts := simOptions(rng)
		t.Run(fmt.Sprintf("round=%d/lagged=%v", round, lagged), func(t *testing.T) {
			s := newSim(t, rng, opts)
			tick, res := s.h.cfg.tick, s.h.cfg.resolution
			within := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d) + 1)) }
			for i := range 4 { // two busy throughout, two silent, which the idle timeout closes
				c := &simConn{closeAt: -1, gap: timeout / 2}
				if i < 2 {
					c.quietAt = 1 << 62
				}
				s.conns = append(s.conns, c)
			}
			timers := make([]Timer, 20)
			models := make([]timerModel, len(timers))
			fires := 0
			var act func(now time.Duration)
			fn := func(j int) func(gnet.Conn) {
				return func(c gnet.Conn) {
					now := s.elapsed()
					m := &models[j]
					require.True(t, m.armed, "timer %d fired unarmed at %v", j, now)
					if m.conn >= 0 {
						require.True(t, s.conns[m.conn].open, "timer %d fired after its connection closed", j)
						require.Equal(t, gnet.Conn(s.conns[m.conn].fakeConn), c)
					} else {
						require.Nil(t, c)
					}
					want := m.next()
					require.GreaterOrEqual(t, now, want, "timer %d, firing %d early", j, m.k)
					at := s.h.clock.Tick(s.clk.t)
					require.Less(t, m.fired, at+1, "timer %d fired twice at tick %d: periods missed fire one a tick", j, at)
					m.fired = at + 1
					if !lagged {
						require.LessOrEqual(t, now, want+tick+step, "timer %d, firing %d late", j, m.k)
					}
					fires++
					if m.k++; m.period == 0 {
						m.armed = false
					}
					if rng.IntN(3) == 0 {
						act(now) // from the callback, on the loop
					}
				}
			}
			act = func(now time.Duration) {
				j := rng.IntN(len(timers))
				m := &models[j]
				if rng.IntN(4) == 0 {
					dead := m.conn >= 0 && !s.conns[m.conn].open
					if was := timers[j].Stop(); !dead {
						require.Equal(t, m.armed, was, "timer %d: Stop's report", j)
					}
					m.armed = false
					return
				}
				d, period := within(2*timeout), time.Duration(0)
				if rng.IntN(2) == 0 {
					period = tick/2 + within(timeout)
				}
				conn := j%5 - 1
				if conn < 0 {
					require.True(t, s.h.LoopTimer(s.loop, &timers[j], d, period, fn(j)))
				} else if !s.h.ConnTimer(s.conns[conn].fakeConn, &timers[j], d, period, fn(j)) {
					require.False(t, s.conns[conn].open, "ConnTimer refused an open connection")
					return // a closed connection's timer stays as it was: it never fires
				}
				*m = timerModel{armed: true, base: now + d, period: period, conn: conn, fired: m.fired}
				if period != 0 {
					m.period = max(period, tick)
				}
			}
			reused := map[*simConn]bool{}
			s.each = func(now time.Duration) {
				for _, c := range s.conns {
					if c.fakeConn != nil && !c.open && !reused[c] {
						// Its descriptor, reused by a new silent connection,
						// which its timers must not fire for nor close.
						nc := &simConn{openAt: now, closeAt: -1, gap: timeout / 2}
						nc.fakeConn = openFake(s.h, s.loop, c.fd)
						s.byFD[c.fd] = nc
						s.conns = append(s.conns, nc)
						reused[c] = true
					}
				}
				if now < step || rng.IntN(20) != 0 {
					return
				}
				act(now)
				if lagged {
					return
				}
				for j := range models {
					if m := &models[j]; m.armed && (m.conn < 0 || s.conns[m.conn].open) {
						require.LessOrEqual(t, now, m.next()+tick+2*step, "timer %d, firing %d overdue", j, m.k)
					}
				}
			}
			lag := simLag(rng, lagged, res)
			s.run(10*timeout, step, lag)
			require.NotZero(t, fires)
			for i, c := range s.conns {
				if c.closeAt >= 0 {
					require.Equal(t, Idle, c.why, "conn %d", i)
					require.GreaterOrEqual(t, c.closeAt-c.lastData, timeout, "conn %d closed early", i)
				}
			}
			for j := range timers {
				timers[j].Stop()
			}
		})
	}
}

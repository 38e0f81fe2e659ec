package idleconn

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// testSeed returns the seed of a random test, from SEED if set, and logs it
// so that a failure can be replayed.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SEED")
		seed = v
	}
	t.Logf("SEED=%d", seed)
	return seed
}

// simConn is one client of a simulation and what happened to it.
type simConn struct {
	*fakeConn
	openAt   time.Duration
	lastData time.Duration
	// idle is the client's own idle timeout, set with SetIdleTimeout at
	// its open; 0 leaves Options.Timeout.
	idle time.Duration
	// quietAt is when the client stops sending; busy clients never do.
	quietAt time.Duration
	gap     time.Duration // at most between two sends
	nextAt  time.Duration
	closeAt time.Duration // -1 while open
	why     Reason
	// The kernel's send queue (unreadQueue): sent bytes of output that
	// the kernel took at the open, which the peer reads at rate bytes a
	// second from then until readStop; and, if period is not 0, a
	// heartbeat of beat bytes at the open and every period until
	// beatsStop, each of which the peer acknowledges three quarters of a
	// period after it.
	sent, beat        uint64
	rate              float64
	readStop          time.Duration
	period, beatsStop time.Duration
	// aborted records a reset (abortOnClose), queuedAtClose what the
	// queue held at the close, and reapedAt when the close came (closeAt
	// is when the sim saw it, up to a step later).
	aborted       bool
	queuedAtClose uint64
	reapedAt      time.Duration
}

// kernel returns what the peer of c has acknowledged of its connection's
// kernel send queue at now, and what the queue holds.
func (c *simConn) kernel(now time.Duration) (acked, queued uint64) {
	read := max(0, min(now, c.readStop)-c.openAt)
	acked = min(c.sent, uint64(c.rate*read.Seconds()))
	queued = c.sent - acked
	if c.period != 0 {
		beats := uint64((min(now, c.beatsStop)-c.openAt)/c.period) + 1
		read := uint64(0)
		if lag := c.period * 3 / 4; now-c.openAt >= lag {
			read = min(beats, uint64((now-c.openAt-lag)/c.period)+1)
		}
		acked, queued = acked+read*c.beat, queued+(beats-read)*c.beat
	}
	return acked, queued
}

// sim drives a Handler over one fake loop with a fake clock, in steps of
// step: the driver at the ticks wake returns or when nudged, the loop
// running what the driver queued lag later, and the clients sending.
type sim struct {
	t     *testing.T
	rng   *rand.Rand
	clk   *fakeClock
	start time.Time
	h     *Handler
	loop  *fakeLoop
	conns []*simConn
	byFD  map[int]*simConn
	// each, if not nil, runs at every step after the clients, on the
	// loop, as a handler callback would.
	each func(now time.Duration)
}

func newSim(t *testing.T, rng *rand.Rand, opts Options) *sim {
	s := &sim{t: t, rng: rng, clk: &fakeClock{t: time.Unix(1e9, 0)}, byFD: map[int]*simConn{}}
	s.start = s.clk.t
	opts.OnReap = func(c gnet.Conn, why Reason) {
		sc := s.byFD[c.Fd()]
		sc.why, sc.reapedAt = why, s.elapsed()
		_, sc.queuedAtClose = sc.kernel(s.elapsed())
	}
	h, err := newHandler(&nopHandler{}, opts, s.clk.now)
	require.NoError(t, err)
	// A fake's descriptor may be a real one: the socket calls go to the
	// clients' models.
	h.boundUnsent = func(int, int) {}
	h.abortOnClose = func(fd int) { s.byFD[fd].aborted = true }
	h.unreadQueue = func(fd int) (uint64, uint64) { return s.byFD[fd].kernel(s.elapsed()) }
	s.h = h
	s.loop = &fakeLoop{h: h}
	h.OnBoot(gnet.Engine{})
	return s
}

func (s *sim) elapsed() time.Duration { return s.clk.t.Sub(s.start) }

// run simulates until end; lag returns how long the loop takes to run a
// runnable the ticker queued.
func (s *sim) run(end, step time.Duration, lag func() time.Duration) {
	var nextTick, runAt time.Duration
	fd := 100
	for s.elapsed() < end {
		now := s.elapsed()
		if now >= nextTick || nudged(s.h) {
			// The driver: it sleeps until the tick wake returns, or
			// until a loop nudges it.
			next, _ := s.h.wake(s.clk.t)
			nextTick = end
			if next != packwheel.MaxTick {
				nextTick = now + max(s.h.clock.Until(s.clk.t, next), step)
			}
			if len(s.loop.queued) > 0 && runAt <= now {
				runAt = now + lag()
			}
		}
		if len(s.loop.queued) > 0 && now >= runAt {
			s.loop.runQueued()
		}
		for _, c := range s.conns {
			switch {
			case c.fakeConn == nil && now >= c.openAt:
				fd++
				c.fakeConn = openFake(s.h, s.loop, fd)
				s.byFD[fd] = c
				if c.idle != 0 {
					require.True(s.t, s.h.SetIdleTimeout(c.fakeConn, c.idle))
				}
				c.lastData, c.nextAt = now, now+s.pause(c)
			case c.fakeConn != nil && c.open && now >= c.nextAt && now < c.quietAt:
				s.h.OnTraffic(c.fakeConn)
				c.lastData, c.nextAt = now, now+s.pause(c)
			case c.fakeConn != nil && !c.open && c.closeAt < 0:
				c.closeAt = now
			}
		}
		if s.each != nil {
			s.each(now)
		}
		s.clk.t = s.clk.t.Add(step)
	}
}

// nudged reports whether a loop nudged h's driver, taking the nudge.
func nudged(h *Handler) bool {
	select {
	case <-h.wakeup:
		return true
	default:
		return false
	}
}

// simOptions draws the Timeout and Options of a round of the sim's tests:
// a Timeout of 20 to 220 ms, to the nanosecond, so that its rounding to
// ticks leaves room (TestReapBounds), either wheel, and half the time a
// Resolution of Timeout/20 to Timeout rather than the default.
func simOptions(rng *rand.Rand) (time.Duration, Options) {
	timeout := 20*time.Millisecond + time.Duration(rng.Int64N(int64(200*time.Millisecond)))
	opts := Options{Timeout: timeout, Wheel: WheelKind(rng.IntN(2))}
	if rng.IntN(2) == 0 {
		opts.Resolution = max(timeout/time.Duration(1+rng.IntN(20)), MinResolution)
	}
	return timeout, opts
}

// simLag returns how long the sim's loop takes to run a runnable the
// driver queued: no time, or, in a lagged round, up to twice res.
func simLag(rng *rand.Rand, lagged bool, res time.Duration) func() time.Duration {
	if !lagged {
		return func() time.Duration { return 0 }
	}
	return func() time.Duration { return time.Duration(rng.Int64N(int64(2 * res))) }
}

func (s *sim) pause(c *simConn) time.Duration {
	return time.Duration(s.rng.Int64N(int64(c.gap)) + 1)
}

// TestReapBounds checks the reaper's promises over random clients and
// options on a fake clock: an idle connection is closed between its idle
// timeout (Options.Timeout, or its own from SetIdleTimeout) and three ticks
// after it, counted from its last data, a busy one (data at least every
// half its idle timeout) never, and none lives past MaxLifetime and three
// ticks. With the loop late to run the reaper, closes come later but never
// early.
//
// Three ticks, not Resolution, is the lateness of a loop on time: one for
// rounding the limit up to ticks, one for the stamp's tick, one for the
// refresh that sees the expiry (ticksPerResolution), plus a step of the
// sim, by which its driver may wake after the tick it waits for. The
// timeouts are drawn to the nanosecond, so that the rounding to ticks,
// which is little or none for a Timeout in whole milliseconds, leaves room
// to spare: a driver that wakes a loop one tick
// after its timer is due (mutant "wake-tick-late", case l.next.Load() <
// now) then closes past the bound. It shows only when nothing else ran
// the loop at that tick, so half the rounds have a single busy client, a
// sparse neighbour, and the others many.
//
// A quarter of the clients set their own idle timeout, most of them two to
// eight times Timeout, and go quiet while the busy clients keep the loop
// refreshing at most ticks, so that their stamps grow older than the ring,
// which remembers only one to two Timeouts' worth of refreshes: their timers
// fire at arm's horizon, Timeout ahead, and expire settles the stamp while
// the ring still holds its epoch. Without the settle (mutant
// "expire-no-settle") the stamp counts from the oldest refresh remembered,
// which moves on, and the connection never closes; without the horizon
// (mutant "arm-no-horizon") its timer fires after the ring forgot the
// stamp, and it closes far too late or never.
func TestReapBounds(t *testing.T) {
	const step = 100 * time.Microsecond
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 40 {
		lagged := round%2 == 1
		sparse := round%4 >= 2
		timeout, opts := simOptions(rng)
		if rng.IntN(3) == 0 {
			opts.MaxLifetime = time.Duration(rng.Int64N(int64(4 * timeout)))
		}
		t.Run(fmt.Sprintf("round=%d/lagged=%v/sparse=%v", round, lagged, sparse), func(t *testing.T) {
			s := newSim(t, rng, opts)
			res := s.h.cfg.resolution
			late := 3*s.h.cfg.tick + step
			for i := range 80 {
				c := &simConn{openAt: time.Duration(rng.Int64N(int64(timeout))), closeAt: -1, gap: timeout / 2}
				switch i % 4 {
				case 0: // silent
					c.quietAt = 0
				case 1: // busy for a while, then silent
					c.quietAt = c.openAt + time.Duration(rng.Int64N(int64(3*timeout)))
				case 2: // its own idle timeout; busy for a while, then silent
					if rng.IntN(4) == 0 {
						c.idle = res + time.Duration(rng.Int64N(int64(timeout-res)+1))
					} else {
						c.idle = 2*timeout + time.Duration(rng.Int64N(int64(6*timeout)))
					}
					c.gap = min(c.idle, timeout) / 2
					c.quietAt = c.openAt + time.Duration(rng.Int64N(int64(3*timeout)))
				default: // busy throughout; in a sparse round only the first, the others silent
					c.quietAt = 1 << 62
					if sparse && i > 3 {
						c.quietAt = 0
					}
				}
				s.conns = append(s.conns, c)
			}
			lag := simLag(rng, lagged, res)
			// The longest idle timeout, 8*timeout, after data until
			// 4*timeout, and the lag's room.
			end := 13*timeout + 4*res
			s.run(end, step, lag)

			for i, c := range s.conns {
				busy := c.quietAt > end
				if c.closeAt < 0 {
					require.True(t, busy && opts.MaxLifetime == 0, "conn %d never closed: %+v", i, c)
					continue
				}
				limit := cmp.Or(c.idle, timeout)
				idle, life := c.closeAt-c.lastData, c.closeAt-c.openAt
				switch c.why {
				case Idle:
					require.False(t, busy, "busy conn %d closed as idle after %v", i, idle)
					require.GreaterOrEqual(t, idle, limit, "conn %d closed early", i)
					if !lagged {
						require.LessOrEqual(t, idle, limit+late, "conn %d closed late", i)
					}
				case Lifetime:
					require.NotZero(t, opts.MaxLifetime)
					require.GreaterOrEqual(t, life, opts.MaxLifetime, "conn %d closed early", i)
				default:
					t.Fatalf("conn %d closed without a reason", i)
				}
				if opts.MaxLifetime > 0 && !lagged {
					require.LessOrEqual(t, life, opts.MaxLifetime+late, "conn %d outlived MaxLifetime", i)
				}
			}
			require.True(t, settled(s.h, s.h.Stats().Tracked))
		})
	}
}

// TestOverloadRandom checks Options.Overload over random clients and
// options on the sim's fake clock, against a model of its promise: with S
// the scale the open connections set, 1 up to Start·MaxConns of them and
// falling in a line to 0 at MaxConns, an idle timeout L above the Floor F
// shrinks to F+S·(L−F), and one at or below F stays. So a connection is
// closed as idle no sooner than the least such timeout while it was idle,
// less a tick for the rounding to ticks, and, in a round whose loop runs
// the reaper on time, no later than four ticks and a step after it was
// idle for the timeout shrunk at a scale 1/64 higher, the step by which
// the scale must fall before the loop's pass brings timers forward; a
// connection left open was never idle for that long. The scale is the
// highest the loop can have seen from two ticks before that moment until
// it was late, since a scale that rises puts a close off. Four ticks are
// TestReapBounds's three and one for the Floor, also rounded up to ticks.
//
// The clients open in two waves, two thirds of them and then the rest, so
// that the scale falls, rises and falls again; in half the rounds none of
// them sends anything or sets its own idle timeout, a flood of idle
// connections, in which only the opens can tell the loop that the scale
// fell.
//
// Deliberate bugs fail it (internal/mutants, "overload-"): shrinking
// below the floor, a pass that closes but does not bring the other timers
// forward, one that does not note a rising scale, which leaves its later
// falls unscanned, one that waits for eight steps, and an open or a
// driver that does not send the loops their pass when the scale falls a
// step.
func TestOverloadRandom(t *testing.T) {
	const step = 100 * time.Microsecond
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 40 {
		lagged := round%2 == 1
		timeout, opts := simOptions(rng)
		maxConns := 40 + rng.IntN(60)
		opts.MaxConns = maxConns
		res := cmp.Or(opts.Resolution, max(timeout/8, MinResolution))
		opts.Overload = Overload{Start: 0.1 + 0.5*rng.Float64(), Floor: res + time.Duration(rng.Int64N(int64(timeout-res)/2+1))}
		silent := round%4 >= 2 // a flood that sends nothing, which wakes no loop by itself
		t.Run(fmt.Sprintf("round=%d/lagged=%v/silent=%v", round, lagged, silent), func(t *testing.T) {
			s := newSim(t, rng, opts)
			tick := s.h.cfg.tick
			F := opts.Overload.Floor
			within := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }
			for i := range maxConns {
				// Two thirds in a first wave, the rest in a second one, so
				// that the scale falls, rises and falls again.
				wave := time.Duration(i / 3 % 3 / 2)
				c := &simConn{openAt: wave*5*timeout/2 + within(timeout), closeAt: -1}
				if !silent && i%3 == 2 && rng.IntN(2) == 0 { // its own idle timeout
					c.idle = res + within(3*timeout) // set at the open, which wakes the loop
				}
				c.gap = min(cmp.Or(c.idle, timeout), F) / 2 // busy: never idle for a shrunk timeout
				switch {
				case silent || i%3 == 0: // silent
				case i%3 == 1: // busy throughout
					c.quietAt = 1 << 62
				default: // busy for a while, then silent
					c.quietAt = c.openAt + within(4*timeout)
				}
				s.conns = append(s.conns, c)
			}
			lag := simLag(rng, lagged, res)
			end := 14*timeout + 8*res
			s.run(end, step, lag)

			// open[k] counts the connections open at step k, counting
			// each closed from closeAt (when the sim saw it), or, for
			// fewer, from a step before.
			steps := int(end/step) + 2
			many, few := make([]int, steps+1), make([]int, steps+1)
			at := func(d time.Duration) int { return min(max(int(d/step), 0), steps) }
			for _, c := range s.conns {
				many[at(c.openAt)]++
				few[at(c.openAt)]++
				if c.closeAt >= 0 {
					many[at(c.closeAt)]--
					few[at(c.closeAt-step)]--
				}
			}
			for k := 1; k <= steps; k++ {
				many[k] += many[k-1]
				few[k] += few[k-1]
			}
			start := min(max(int(opts.Overload.Start*float64(maxConns)), 1), maxConns-1)
			scale := func(open int) float64 {
				return min(max(1-float64(open-start)/float64(maxConns-start), 0), 1)
			}
			shrunk := func(L time.Duration, S float64) time.Duration {
				if L <= F {
					return L
				}
				return F + time.Duration(S*float64(L-F))
			}
			seen := 2*tick + step // how far back the loop's scale may be
			if lagged {
				seen += 4 * res
			}
			for i, c := range s.conns {
				L := cmp.Or(c.idle, timeout)
				closeAt := c.closeAt
				if closeAt < 0 {
					closeAt = end
				} else {
					require.Equal(t, Idle, c.why, "conn %d", i)
					most := 0 // the most connections open while it was idle
					for k := at(c.lastData - seen); k <= at(c.closeAt); k++ {
						most = max(most, many[k])
					}
					require.GreaterOrEqual(t, c.closeAt-c.lastData, shrunk(L, scale(most))-tick,
						"conn %d closed early: %+v, %d open at most", i, c, most)
				}
				if lagged {
					continue
				}
				// Never idle for its timeout shrunk at a scale 1/64 above
				// any the loop can have seen from then until it was late.
				late := 4*tick + step
				for k := at(c.lastData); k < at(closeAt-late); k++ {
					fewest := many[k]
					for j := at(time.Duration(k)*step - seen); j <= at(time.Duration(k)*step+late); j++ {
						fewest = min(fewest, few[j])
					}
					idle := time.Duration(k)*step - c.lastData
					require.Less(t, idle, shrunk(L, min(scale(fewest)+1.0/64, 1)),
						"conn %d closed late or never: %+v, %d open", i, c, fewest)
				}
			}
		})
	}
}

// TestIdleLookRandom checks the Idle close's look at the kernel's send
// queue (idleLook) over random clients, options and queues on the sim's
// fake clock. With L a client's idle timeout, late the reaper's lateness
// (TestReapBounds) and times counted from its last data, a look's promises
// are these. A connection whose queue is empty at its close is closed
// plainly, and one whose queue holds output is reset, never closed
// plainly, which would leave the output to an orphaned socket. An empty
// queue closes at L, as without the look. A peer that never reads is reset
// at the second look, at 2L. One that keeps up, reading four times
// MinDrainRate's share of each timeout or more (with the rate off, forty
// bytes or more), or all that is queued, keeps its connection until the
// queue is empty, and it is then closed plainly within L. So does one
// sent a heartbeat slower than the rate, which it reads whole, each beat
// in flight for most of a period: it is never reset, and it is closed
// plainly by a look that finds no beat in flight. One that stops reading
// with output left is reset within two timeouts of the look after it
// stopped, and no sooner than half a timeout after its last progress (a
// whole one with the rate off, when any byte keeps up). In a round whose
// loop runs the reaper late, only the lower bounds hold.
//
// Six deliberate bugs fail it (internal/mutants, "look-"): a look that
// never looks, one that closes plainly where it should reset, one that
// keeps its first mark, one that asks the rate's share alone (the
// heartbeats) or the whole queue, and one that does not start the timeout
// over.
func TestIdleLookRandom(t *testing.T) {
	const step = 100 * time.Microsecond
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 40 {
		lagged := round%2 == 1
		timeout, opts := simOptions(rng)
		if round%4 >= 2 {
			opts.MinDrainRate = 1000 + rng.IntN(50000) // at least 20 bytes a timeout
		}
		t.Run(fmt.Sprintf("round=%d/lagged=%v/rate=%d", round, lagged, opts.MinDrainRate), func(t *testing.T) {
			s := newSim(t, rng, opts)
			res := s.h.cfg.resolution
			late := 3*s.h.cfg.tick + step
			L := timeout
			within := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }
			// fast is the slowest rate that keeps up: four times the
			// drain rate, and forty bytes a timeout.
			fast := max(4*float64(opts.MinDrainRate), 40/L.Seconds())
			const kinds = 5
			for i := range 60 {
				c := &simConn{openAt: within(L), closeAt: -1, gap: L / 2, readStop: 1 << 62}
				if i/kinds%2 == 1 { // busy for a while, then silent
					c.quietAt = c.openAt + within(2*L)
				}
				switch i % kinds {
				case 1: // a queue its peer never reads
					c.sent = 1 + uint64(rng.IntN(1<<20))
				case 2: // read as fast as it must or faster, to the end
					c.rate = fast * (1 + 3*rng.Float64())
					c.sent = 1 + uint64(c.rate*within(4*L).Seconds())
				case 3: // read as fast, then not at all, with output left
					c.rate = fast * (1 + 3*rng.Float64())
					c.readStop = c.openAt + within(3*L)
					c.sent = uint64(c.rate*(c.readStop-c.openAt).Seconds()) + 1 + uint64(rng.IntN(1<<20))
				case 4: // a heartbeat, a quarter of the drain rate, read whole
					c.period, c.beatsStop = L/4, c.openAt+within(4*L)
					c.beat = max(8, uint64(float64(opts.MinDrainRate)*c.period.Seconds()/4))
				}
				s.conns = append(s.conns, c)
			}
			lag := simLag(rng, lagged, res)
			s.run(12*L+8*res, step, lag)

			for i, c := range s.conns {
				require.GreaterOrEqual(t, c.closeAt, time.Duration(0), "conn %d never closed: %+v", i, c)
				require.Equal(t, Idle, c.why, "conn %d", i)
				require.Equal(t, c.queuedAtClose != 0, c.aborted, "conn %d: %d bytes queued at its close; reset: %v", i, c.queuedAtClose, c.aborted)
				since := c.closeAt - c.lastData
				var atLeast, atMost time.Duration // since the last data
				reset := false
				switch i % kinds {
				case 0:
					atLeast, atMost = L, L+late
				case 1:
					atLeast, atMost, reset = 2*L, 2*L+2*late, true
				case 2:
					empty := c.openAt + time.Duration(float64(c.sent)/c.rate*float64(time.Second))
					atLeast, atMost = L, max(0, empty-c.lastData)+L+late
				case 3:
					acked, _ := c.kernel(c.readStop)
					progress := c.openAt + time.Duration(float64(acked)/c.rate*float64(time.Second))
					keep := L / 2 // a window's first quarter may fall short of a rate
					if opts.MinDrainRate == 0 {
						keep = L - time.Microsecond // rounding of progress
					}
					atLeast = max(2*L, progress+keep-c.lastData)
					atMost = max(0, c.readStop-c.lastData) + 2*L + 2*late
					reset = true
				case 4:
					atLeast, atMost = L, max(0, c.beatsStop+c.period-c.lastData)+L+late
				}
				require.Equal(t, reset, c.aborted, "conn %d: reset %v", i, c.aborted)
				require.GreaterOrEqual(t, since, atLeast, "conn %d closed early: %+v", i, c)
				if !lagged {
					require.LessOrEqual(t, since, atMost, "conn %d closed late: %+v", i, c)
				}
			}
		})
	}
}

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
}

func newSim(t *testing.T, rng *rand.Rand, opts Options) *sim {
	s := &sim{t: t, rng: rng, clk: &fakeClock{t: time.Unix(1e9, 0)}, byFD: map[int]*simConn{}}
	s.start = s.clk.t
	opts.OnReap = func(c gnet.Conn, why Reason) { s.byFD[c.Fd()].why = why }
	h, err := newHandler(&nopHandler{}, opts, s.clk.now)
	require.NoError(t, err)
	h.boundUnsent = func(int, int) {} // a fake's descriptor may be a real one
	h.abortOnClose = func(int) {}
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
		timeout := 20*time.Millisecond + time.Duration(rng.Int64N(int64(200*time.Millisecond)))
		opts := Options{Timeout: timeout, Wheel: WheelKind(rng.IntN(2))}
		if rng.IntN(2) == 0 {
			opts.Resolution = max(timeout/time.Duration(1+rng.IntN(20)), MinResolution)
		}
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
			lag := func() time.Duration { return 0 }
			if lagged {
				lag = func() time.Duration { return time.Duration(rng.Int64N(int64(2 * res))) }
			}
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

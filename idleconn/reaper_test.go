package idleconn

import (
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
// options on a fake clock: an idle connection is closed between Timeout and
// Timeout+Resolution after its last data, a busy one (data at least every
// Timeout/2) never, and none lives past MaxLifetime+Resolution. With the
// loop late to run the reaper, closes come later but never early.
func TestReapBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for round := range 40 {
		lagged := round%2 == 1
		timeout := time.Duration(20+rng.IntN(200)) * time.Millisecond
		opts := Options{Timeout: timeout, Wheel: WheelKind(rng.IntN(2))}
		if rng.IntN(2) == 0 {
			opts.Resolution = max(timeout/time.Duration(1+rng.IntN(20)), MinResolution)
		}
		if rng.IntN(3) == 0 {
			opts.MaxLifetime = time.Duration(rng.Int64N(int64(4 * timeout)))
		}
		t.Run(fmt.Sprintf("round=%d/lagged=%v", round, lagged), func(t *testing.T) {
			s := newSim(t, rng, opts)
			res := s.h.cfg.resolution
			for i := range 60 {
				c := &simConn{openAt: time.Duration(rng.Int64N(int64(timeout))), closeAt: -1, gap: timeout / 2}
				switch i % 3 {
				case 0: // silent
					c.quietAt = 0
				case 1: // busy for a while, then silent
					c.quietAt = c.openAt + time.Duration(rng.Int64N(int64(3*timeout)))
				default: // busy throughout
					c.quietAt = 1 << 62
				}
				s.conns = append(s.conns, c)
			}
			lag := func() time.Duration { return 0 }
			if lagged {
				lag = func() time.Duration { return time.Duration(rng.Int64N(int64(2 * res))) }
			}
			end := 6*timeout + 4*res
			s.run(end, 100*time.Microsecond, lag)

			for i, c := range s.conns {
				busy := c.quietAt > end
				if c.closeAt < 0 {
					require.True(t, busy && opts.MaxLifetime == 0, "conn %d never closed: %+v", i, c)
					continue
				}
				idle, life := c.closeAt-c.lastData, c.closeAt-c.openAt
				switch c.why {
				case Idle:
					require.False(t, busy, "busy conn %d closed as idle after %v", i, idle)
					require.GreaterOrEqual(t, idle, timeout, "conn %d closed early", i)
					if !lagged {
						require.LessOrEqual(t, idle, timeout+res, "conn %d closed late", i)
					}
				case Lifetime:
					require.NotZero(t, opts.MaxLifetime)
					require.GreaterOrEqual(t, life, opts.MaxLifetime, "conn %d closed early", i)
				default:
					t.Fatalf("conn %d closed without a reason", i)
				}
				if opts.MaxLifetime > 0 && !lagged {
					require.LessOrEqual(t, life, opts.MaxLifetime+res, "conn %d outlived MaxLifetime", i)
				}
			}
			require.True(t, settled(s.h, s.h.Stats().Tracked))
		})
	}
}

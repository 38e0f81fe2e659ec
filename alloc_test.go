package packwheel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZeroAllocs asserts that no hot operation allocates once the buckets
// and the pool are warm.
func TestZeroAllocs(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		conns := make([]conn, 4096)
		for i := range conns {
			conns[i].id = i
		}
		var fired int
		expire := func(*conn) { fired++ }
		dst := make([]*conn, 0, len(conns))
		i := 0
		next := func() *conn { i++; return &conns[i%len(conns)] }
		// Deadlines spread over about a minute of 1 ms ticks, so every
		// level of the hierarchical wheel is in use.
		far := func() uint64 { return w.Now() + 1 + uint64(i*7919)%60_000 }
		ops := []struct {
			name string
			op   func()
		}{
			{"Schedule+Cancel", func() {
				c := next()
				w.Cancel(&c.timer)
				w.Schedule(&c.timer, far(), c)
				w.Cancel(&c.timer)
			}},
			{"Reschedule", func() {
				c := next()
				w.Schedule(&c.timer, far(), c)
			}},
			{"ScheduleAfter", func() {
				c := next()
				w.ScheduleAfter(&c.timer, 30_000, c)
			}},
			{"ScheduleRange", func() {
				c := next()
				w.ScheduleRange(&c.timer, w.Now()+30_000, w.Now()+31_000, c)
			}},
			{"Advance", func() {
				for range 8 {
					c := next()
					w.Schedule(&c.timer, w.Now()+1+uint64(i%3), c)
				}
				w.Advance(w.Now()+3, expire)
			}},
			{"AdvanceLimit", func() {
				for range 8 {
					c := next()
					w.Schedule(&c.timer, w.Now()+1, c)
				}
				for !w.AdvanceLimit(w.Now()+1, 3, expire) {
				}
			}},
			{"AppendExpired", func() {
				for range 8 {
					c := next()
					w.Schedule(&c.timer, w.Now()+1+uint64(i%5), c)
				}
				dst, _ = w.AppendExpired(dst[:0], w.Now()+5, len(conns))
			}},
			{"NextExpiry", func() { w.NextExpiry(w.Now() + 100_000) }},
		}
		// Warm up: fill the wheel, then run every operation a while, with
		// time moving, so buckets and pool reach their working sizes.
		for range len(conns) {
			c := next()
			w.Schedule(&c.timer, far(), c)
		}
		for range 20 {
			for _, o := range ops {
				for range 500 {
					o.op()
				}
			}
			w.Advance(w.Now()+50, expire)
		}
		for _, o := range ops {
			t.Run(o.name, func(t *testing.T) {
				require.Zero(t, testing.AllocsPerRun(2000, o.op))
				mustCheck(t, w)
			})
		}
		require.NotZero(t, fired, "the advance operations fired nothing")
	})
}

// TestRearmSteadyState asserts that timers which keep firing and re-arming
// allocate nothing once warm, at delays that keep them in level 0, move
// them down from levels 1 and 2, and, in the hashed wheel, keep them
// waiting a revolution or more: the chunks a bucket empties as it fires
// are those the buckets its timers re-arm into need.
func TestRearmSteadyState(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of thousands of ticks of 100k timers take a minute under -race; counting mallocs needs no race detector")
	}
	for _, k := range defaultWheelKinds {
		for _, after := range []uint64{17, 40, 64, 100, 1000, 5000} {
			t.Run(fmt.Sprintf("%s/after=%d", k.name, after), func(t *testing.T) {
				w := k.make()
				conns := make([]conn, 20_000)
				rnd := xorshift(1)
				for i := range conns {
					w.Schedule(&conns[i].timer, 1+rnd()%(2*after), &conns[i])
				}
				dst := make([]*conn, 0, len(conns))
				tick := func() {
					dst, _ = w.AppendExpired(dst[:0], w.Now()+1, len(conns))
					for _, c := range dst {
						w.Schedule(&c.timer, w.Now()+after+rnd()%after, c)
					}
				}
				// Past three Retain periods and 4096-tick boundaries, and
				// four lifetimes: a bucket that finds no free chunk of 8
				// takes a larger one as its first and gives it back when
				// it empties, so the buckets come to keep chunks of 8 as
				// refills make them, which takes the hashed wheel at
				// after=1000 into its third period
				// (bench/results/workunits-large.txt).
				for range 4*after + 3*Retain {
					tick()
				}
				// One run of many ticks: AllocsPerRun averages over runs
				// and rounds down, which would hide an array grown now and
				// then.
				allocs := testing.AllocsPerRun(1, func() {
					for range 5000 {
						tick()
					}
				})
				require.Zero(t, allocs)
				require.Equal(t, len(conns), w.Len())
				mustCheck(t, w)
			})
		}
	}
}

// TestPatternsAllocateNothing runs the patterns of bench/'s benchmarks at
// their sizes up to a million timers, and asserts that once warm they
// allocate nothing: Expire's batches (n timers scheduled within 1000 ticks
// and all fired, each batch starting where the last ended, so at another
// alignment to the levels), ScheduleCancel (a random timer cancelled and
// scheduled 30,000 ticks ahead, time moving a tick per n/1000 operations)
// and Churn (the same, rescheduled without a cancel).
func TestPatternsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("millions of operations; counting mallocs needs no race detector")
	}
	sizes := []int{10_000, 100_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, k := range defaultWheelKinds {
		for _, n := range sizes {
			for _, pattern := range []string{"expire", "schedule-cancel", "churn"} {
				t.Run(fmt.Sprintf("%s/%s/n=%d", k.name, pattern, n), func(t *testing.T) {
					w := k.make()
					conns := make([]conn, n)
					rnd := xorshift(1)
					var run func()
					if pattern == "expire" {
						run = func() { expireBatch(w, conns, rnd) }
					} else {
						for i := range conns {
							w.Schedule(&conns[i].timer, 30_000-rnd()%1000, &conns[i])
						}
						every, cancel := n/1000, pattern == "schedule-cancel"
						run = func() { // a tick's operations
							w.Advance(w.Now()+1, nil)
							for range every {
								c := &conns[(rnd()>>32)*uint64(n)>>32]
								if cancel {
									w.Cancel(&c.timer)
								}
								w.Schedule(&c.timer, w.Now()+30_000, c)
							}
						}
					}
					// Warm: ten batches, or two Retain periods of ticks;
					// then as many again.
					warm, measure := 10, 10
					if pattern != "expire" {
						warm, measure = 2*Retain, 2*Retain
					}
					if n > 100_000 {
						warm, measure = warm/2, measure/2
					}
					for range warm {
						run()
					}
					allocs := testing.AllocsPerRun(1, func() {
						for range measure {
							run()
						}
					})
					require.Zero(t, allocs)
					mustCheck(t, w)
				})
			}
		}
	}
}

// TestWavesAllocateNothingForLong runs Expire's batches, each of n timers
// scheduled within 1000 ticks and all fired, for 300 batches after a
// hundred, some 70 Retain periods, and asserts that not one of them
// allocates: that the headroom kept at each Release covers the spread of
// a steady state's peaks for good, not only for the ten batches
// TestPatternsAllocateNothing measures, and at a few thousand timers,
// where a wheel needs few chunks of a size. The hundred warm batches let
// every bucket of the hashed ring hold a timer, and so keep a first
// chunk, even at 1,000 timers a batch. A headroom of a fixed eighth of the
// chunks needed fails it (the hierarchical wheel at 1,000 timers), and so
// does a first chunk of 4 entries (the hashed wheel at 3,000).
func TestWavesAllocateNothingForLong(t *testing.T) {
	if raceEnabled {
		t.Skip("counting mallocs needs no race detector")
	}
	for _, k := range defaultWheelKinds {
		for _, n := range []int{1_000, 3_000, 10_000} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				w := k.make()
				conns := make([]conn, n)
				rnd := xorshift(1)
				for range 100 {
					expireBatch(w, conns, rnd)
				}
				// Every batch counted (testing.AllocsPerRun would run one
				// batch uncounted before each).
				for i := range 300 {
					if allocs := mallocs(func() { expireBatch(w, conns, rnd) }); allocs != 0 {
						t.Fatalf("batch %d after the warm ones allocated %d times", i, allocs)
					}
				}
				mustCheck(t, w)
			})
		}
	}
}

// expireBatch is one of bench's Expire batches: every conn's timer
// scheduled within the next 1000 ticks, at random, and all of them fired.
func expireBatch(w Timers[*conn], conns []conn, rnd func() uint64) {
	now := w.Now()
	for i := range conns {
		w.Schedule(&conns[i].timer, now+1+rnd()%1000, &conns[i])
	}
	w.Advance(now+1000, nil)
}

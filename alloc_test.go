package packwheel

import (
	"fmt"
	"runtime"
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
// allocate nothing once warm. In the hierarchical wheel they gather in one
// coarse slot after another, each moved down in turn: that used to send the
// slot's array to the collector every rotation (20 KB per tick at 10k
// timers), and, before levels became rings, to pile every timer into a
// level-2 slot ahead of each crossing of a 4096-tick boundary (1 KB per
// tick at 100k timers re-armed after 1000 to 2000 ticks), and, while only
// emptied coarse slots handed their arrays on, to drop a few of level 0's
// every rotation when all timers pass through it (1.7 KB per tick at
// after=64, 10 B at after=40). In the hashed wheel, before a bucket that
// fired handed its array on, the bucket that the timers re-armed into
// grew a class at a time and now and then found no spare of the class it
// needed (about 12 B per tick at after=17).
func TestRearmSteadyState(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of thousands of ticks of 100k timers take a minute under -race; counting mallocs needs no race detector")
	}
	for _, k := range defaultWheelKinds {
		for _, after := range []uint64{17, 40, 64, 100, 1000, 5000} {
			t.Run(fmt.Sprintf("%s/after=%d", k.name, after), func(t *testing.T) {
				w := k.make()
				// At 10k timers the arrays fit the shelf's budget even
				// without heirs; at 100k they do not.
				conns := make([]conn, 100_000)
				seed := uint64(1)
				rnd := func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
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
				// Past two 4096-tick boundaries, and sixty lifetimes: the
				// buckets of a hashed wheel whose timers wait more than a
				// revolution stay partly full, their sizes wander, and
				// each reaches the largest size class it needs only after
				// tens of lifetimes (at after=5000, 2 arrays grew in 5000
				// ticks after 6 lifetimes, 1 after 20, none after 40).
				// The hierarchical wheel once needed three times as long,
				// while its level-0 slots kept their small arrays for
				// good and each grew to its largest size on its own; now
				// a slot that fires hands its array on like any other.
				for range 60*after + 9000 {
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

// TestHashedHandsArrayOn checks that a hashed bucket emptied by firing
// keeps its array as the heir of the next bucket that starts filling,
// wherever on the ring that is: otherwise the bucket the timers re-arm into
// grows a class at a time, and at 100k timers re-armed every 17 to 33 ticks
// now and then found no spare of the class it needed (12 B per tick in
// BenchmarkRearm).
func TestHashedHandsArrayOn(t *testing.T) {
	w := new(Hashed[*conn])
	conns := make([]conn, 6000)
	for i := range conns {
		// Half wait: the kept arrays' budget follows the live timers.
		w.Schedule(&conns[i].timer, 10+uint64(i%2)*5000, &conns[i])
	}
	crowded := w.s.buckets[10].Cap()
	w.Advance(10, nil)
	const far = 10 + 3*64 // in another block of 64 slots
	w.Schedule(&conns[0].timer, far, &conns[0])
	require.Equal(t, crowded, w.s.buckets[far].Cap())
	mustCheck(t, w)
}

// TestCancelSteadyState runs the request-timeout pattern of bench/'s
// ScheduleCancel: timers scheduled 30 s ahead and cancelled about a second
// later, time moving one tick per n/1000 operations. In the hierarchical
// wheel every timer of a 4096-tick window gathers in one coarse slot,
// which drains by cancels while the next one fills: the first goes down
// the size classes while the second climbs them, each needing arrays the
// other left most of a rotation before. Before the shelf widened its
// budget while buckets shrink, the wheel allocated 27.6 B per operation at
// 10k timers and 37.4 B at 100k (17.7 B at 100k with the widening bounded
// by twice the live timers, see shrinksBound). Now neither wheel allocates
// arrays; the shelf's queues of spare arrays still grow now and then
// (under 10 KB in the measured run).
func TestCancelSteadyState(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("tens of millions of operations")
	}
	for _, k := range defaultWheelKinds {
		for _, n := range []int{10_000, 100_000} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				w := k.make()
				conns := make([]conn, n)
				seed := uint64(1)
				rnd := func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
				for i := range conns {
					w.Schedule(&conns[i].timer, 30_000-rnd()%1000, &conns[i])
				}
				every := n / 1000
				op := func(i int) {
					if i%every == 0 {
						w.Advance(w.Now()+1, nil)
					}
					c := &conns[(rnd()>>32)*uint64(n)>>32]
					w.Cancel(&c.timer)
					w.Schedule(&c.timer, w.Now()+30_000, c)
				}
				// Ten rotations of a level-2 slot (4096 ticks) to warm up,
				// ten to measure.
				ops := 10 * 4096 * every
				for i := range ops {
					op(i)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range ops {
					op(i)
				}
				runtime.ReadMemStats(&after)
				perOp := float64(after.TotalAlloc-before.TotalAlloc) / float64(ops)
				t.Logf("%.2f bytes allocated per schedule and cancel", perOp)
				require.Less(t, perOp, 0.1)
				mustCheck(t, w)
			})
		}
	}
}

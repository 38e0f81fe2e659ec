package packwheel_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/packwheel/packwheel"
)

// The benchmarks model a server at 1 ms ticks: n outstanding timers about
// 30 s out, time advancing one tick every ticksEvery operations. The
// timer-reset baseline is a runtime timer per entry, as time.AfterFunc
// creates, moved with Reset and stopped with Stop, measured in the same run.

var sizes = []int{10_000, 100_000, 1_000_000}

const (
	timeout    = 30_000 // ticks, 30 s at 1 ms
	jitter     = 1024   // ticks of spread around timeout
	ticksEvery = 1000   // operations per tick of simulated time
)

type item struct {
	timer packwheel.Holder
	rt    *time.Timer // the timer-reset baseline's timer
}

type impl struct {
	name string
	new  func() packwheel.Timers[*item]
}

var wheels = []impl{
	{"hashed", func() packwheel.Timers[*item] { return packwheel.NewHashed[*item](packwheel.HashedOptions{}) }},
	{"wheel", func() packwheel.Timers[*item] { return new(packwheel.Wheel[*item]) }},
}

// rng is a xorshift generator: cheap and identical for every impl.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

// below maps x onto [0, n) with a multiply instead of a division, which
// would cost every impl alike and blur the ratios.
func below(x uint64, n int) uint64 { return (x >> 32) * uint64(n) >> 32 }

func name(impl string, n int) string { return "impl=" + impl + "/n=" + strconv.Itoa(n) }

func noop(*item) {}

// fill schedules n timers spread over one timeout, as in steady state.
func fill(w packwheel.Timers[*item], n int, r *rng) []item {
	items := make([]item, n)
	for i := range items {
		w.Schedule(&items[i].timer, w.Now()+timeout+r.next()%timeout, &items[i])
	}
	return items
}

// fillRuntime creates n runtime timers spread over one timeout.
func fillRuntime(n int, r *rng) []item {
	items := make([]item, n)
	f := func() {}
	for i := range items {
		items[i].rt = time.AfterFunc(time.Duration(timeout+r.next()%timeout)*time.Millisecond, f)
	}
	return items
}

func stopRuntime(items []item) {
	for i := range items {
		items[i].rt.Stop()
	}
}

// BenchmarkReschedule moves a random outstanding timer to about 30 s from
// now: the idle-timeout pattern, where nothing fires.
func BenchmarkReschedule(b *testing.B) {
	for _, n := range sizes {
		for _, im := range wheels {
			b.Run(name(im.name, n), func(b *testing.B) {
				r := rng(1)
				w := im.new()
				items := fill(w, n, &r)
				reschedule := reschedules(w, items, &r)
				// Warm up to the steady state, where every timer has been
				// pushed back at least once (fill spreads them further out).
				reschedule(4 * n)
				b.ReportAllocs()
				b.ResetTimer()
				reschedule(b.N)
			})
		}
		b.Run(name("timer-reset", n), func(b *testing.B) {
			r := rng(1)
			items := fillRuntime(n, &r)
			defer stopRuntime(items)
			reset := func() {
				x := r.next()
				items[below(x, n)].rt.Reset(time.Duration(timeout+x&(jitter-1)) * time.Millisecond)
			}
			for range 4 * n { // the same warm-up as the wheels
				reset()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				reset()
			}
		})
	}
}

// reschedules returns BenchmarkReschedule's loop over w: ops times, move a
// random item's timer to about 30 s from now. It calls the wheel through its
// concrete type, as a program does and as the timer-reset baseline calls
// time.Timer.Reset (bench/ does the same, for the same reason). Through the
// Timers interface, two dynamic calls per operation cost 15-25 ns more at a
// million timers (100-120 ns against 86-100, one run on 2026-11-22): they
// lengthen the code that waits behind each reschedule's cache misses, so
// fewer reschedules overlap. Generic code would dispatch the same way, hence
// one copy of the loop per wheel.
func reschedules(w packwheel.Timers[*item], items []item, r *rng) func(ops int) {
	n := len(items)
	switch w := w.(type) {
	case *packwheel.Hashed[*item]:
		return func(ops int) {
			for i := range ops {
				if i%ticksEvery == 0 {
					w.Advance(w.Now()+1, noop)
				}
				x := r.next()
				it := &items[below(x, n)]
				w.Schedule(&it.timer, w.Now()+timeout+x&(jitter-1), it)
			}
		}
	case *packwheel.Wheel[*item]:
		return func(ops int) {
			for i := range ops {
				if i%ticksEvery == 0 {
					w.Advance(w.Now()+1, noop)
				}
				x := r.next()
				it := &items[below(x, n)]
				w.Schedule(&it.timer, w.Now()+timeout+x&(jitter-1), it)
			}
		}
	}
	panic("reschedules: unknown wheel type")
}

// scheduleCancels returns BenchmarkRequestTimeout's loop over w: ops times,
// schedule one of reqs 5 s out and cancel it. Like reschedules, one copy per
// wheel.
func scheduleCancels(w packwheel.Timers[*item], reqs []item, r *rng, every int) func(ops int) {
	switch w := w.(type) {
	case *packwheel.Hashed[*item]:
		return func(ops int) {
			for i := range ops {
				if i%every == 0 {
					w.Advance(w.Now()+1, noop)
				}
				it := &reqs[i%len(reqs)]
				w.Schedule(&it.timer, w.Now()+5000+r.next()%jitter, it)
				w.Cancel(&it.timer)
			}
		}
	case *packwheel.Wheel[*item]:
		return func(ops int) {
			for i := range ops {
				if i%every == 0 {
					w.Advance(w.Now()+1, noop)
				}
				it := &reqs[i%len(reqs)]
				w.Schedule(&it.timer, w.Now()+5000+r.next()%jitter, it)
				w.Cancel(&it.timer)
			}
		}
	}
	panic("scheduleCancels: unknown wheel type")
}

// BenchmarkRequestTimeout schedules a timer 5 s out and cancels it, with n
// other timers outstanding: a request's timeout, cancelled as the request
// completes. (bench/'s ScheduleCancel moves an outstanding timer instead.) Time advances one
// tick every `every` operations: a busy server at 1 ms ticks does
// thousands of operations per tick, and the fewer ticks pass, the longer
// one coarse slot receives every request and empties with each cancel.
func BenchmarkRequestTimeout(b *testing.B) {
	const requests = 1024
	for _, n := range sizes {
		for _, im := range wheels {
			for _, every := range []int{ticksEvery, 4096, 65536} {
				b.Run(name(im.name, n)+"/every="+strconv.Itoa(every), func(b *testing.B) {
					r := rng(1)
					w := im.new()
					fill(w, n, &r)
					requestTimeouts := scheduleCancels(w, make([]item, requests), &r, every)
					b.ReportAllocs()
					b.ResetTimer()
					requestTimeouts(b.N)
				})
			}
		}
		b.Run(name("timer-reset", n), func(b *testing.B) {
			r := rng(1)
			items := fillRuntime(n, &r)
			defer stopRuntime(items)
			reqs := fillRuntime(requests, &r)
			stopRuntime(reqs)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t := reqs[i%requests].rt
				t.Reset(time.Duration(5000+r.next()%jitter) * time.Millisecond)
				t.Stop()
			}
		})
	}
}

// BenchmarkFireBucket fires full buckets: n timers due at the same tick. One
// operation is one expiry; the setup of each bucket is not timed.
func BenchmarkFireBucket(b *testing.B) {
	for _, n := range sizes {
		for _, im := range wheels {
			b.Run(name(im.name, n), func(b *testing.B) {
				w := im.new()
				items := make([]item, n)
				fired := 0
				expire := func(*item) { fired++ }
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; {
					b.StopTimer()
					batch := min(n, b.N-done)
					for i := range batch {
						w.Schedule(&items[i].timer, w.Now()+1, &items[i])
					}
					b.StartTimer()
					w.Advance(w.Now()+1, expire)
					done += batch
				}
				if fired != b.N {
					b.Fatalf("fired %d of %d", fired, b.N)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "expiries/s")
			})
		}
	}
}

// BenchmarkAdvanceIdle advances across one hour of 1 ms ticks in which no
// timer is due, with n timers outstanding far beyond.
func BenchmarkAdvanceIdle(b *testing.B) {
	const hour = 3_600_000
	for _, n := range sizes {
		for _, im := range wheels {
			b.Run(name(im.name, n), func(b *testing.B) {
				r := rng(1)
				w := im.new()
				items := make([]item, n)
				for i := range items {
					w.Schedule(&items[i].timer, 1<<50+r.next()%(1<<30), &items[i])
				}
				w.Advance(hour, noop) // let a hashed wheel sweep once
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					w.Advance(w.Now()+hour, noop)
				}
				if w.Len() != n {
					b.Fatalf("%d timers fired", n-w.Len())
				}
			})
		}
	}
}

// BenchmarkMemoryFloor reads a random item, then the random entry its
// index names: the two dependent memory accesses that any reschedule which
// checks its holder against the wheel must make, with the sizes and strides
// of BenchmarkReschedule (24-byte items holding a 16-byte holder, 24-byte
// entries). At a million timers both miss every cache; no packed wheel that
// validates its holders can go under this.
func BenchmarkMemoryFloor(b *testing.B) {
	type holderItem struct { // 24 bytes, as BenchmarkReschedule's items
		index uint32
		_     [20]byte
	}
	type entry struct { // 24 bytes, as a packed entry of a pointer value
		deadline uint64
		_        [16]byte
	}
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			items := make([]holderItem, n)
			entries := make([]entry, n)
			r := rng(1)
			for i := range items {
				items[i].index = uint32(below(r.next(), n))
			}
			var sum uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				it := &items[below(r.next(), n)]
				sum += entries[it.index].deadline
			}
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
}

// BenchmarkTick advances one tick at a time with n timers spread over 30 s,
// re-arming each timer 30 s out as it fires, so occupancy stays put: from a
// hundred timers (most buckets empty) to a million (every bucket full).
func BenchmarkTick(b *testing.B) {
	for _, n := range []int{100, 10_000, 1_000_000} {
		for _, im := range wheels {
			b.Run(name(im.name, n), func(b *testing.B) {
				r := rng(1)
				w := im.new()
				fill(w, n, &r)
				rearm := func(it *item) { w.Schedule(&it.timer, w.Now()+timeout, it) }
				// Two lifetimes, after which the buckets have grown to
				// what the re-arming needs: without them a million timers
				// allocated 6-8 MB over the first run, whatever b.N.
				for range 2 * timeout {
					w.Advance(w.Now()+1, rearm)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					w.Advance(w.Now()+1, rearm)
				}
				if w.Len() != n {
					b.Fatalf("Len %d, want %d", w.Len(), n)
				}
			})
		}
	}
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkRearm fires the timers due each tick and re-arms each after a
// random delay in [after, 2*after) ticks, with n timers: timeouts that keep
// firing, as a retransmission or keep-alive timer does. One operation is one
// tick. A hierarchical wheel gathers the timers of each coming coarse slot,
// moves them down as it comes due and refills the next: the pattern that
// makes its arrays cycle through the pool. At 40 and 64 every timer also
// passes through level 0, whose 64 arrays then all empty and refill once
// per 64 ticks.
func BenchmarkRearm(b *testing.B) {
	for _, after := range []uint64{17, 40, 64, 100, 1000, 5000} {
		for _, n := range []int{10_000, 100_000} {
			for _, im := range wheels {
				b.Run(name(im.name, n)+"/after="+strconv.FormatUint(after, 10), func(b *testing.B) {
					items := make([]item, n)
					dst := make([]*item, 0, n)
					base := heapInUse()
					w := im.new()
					r := rng(1)
					for i := range items {
						w.Schedule(&items[i].timer, 1+r.next()%(2*after), &items[i])
					}
					tick := func() {
						dst, _ = w.AppendExpired(dst[:0], w.Now()+1, n)
						for _, it := range dst {
							w.Schedule(&it.timer, w.Now()+after+r.next()%after, it)
						}
					}
					// Warm up as TestRearmSteadyState does: sixty
					// lifetimes and two 4096-tick boundaries.
					for range 60*after + 9000 {
						tick()
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						tick()
					}
					b.StopTimer()
					// The wheel's memory, spare arrays included.
					b.ReportMetric(float64(heapInUse()-base)/float64(n), "B/timer")
					runtime.KeepAlive(w)
				})
			}
		}
	}
}

package bench

import (
	"fmt"
	"runtime"
	"testing"
)

// sizes are the numbers of outstanding timers each workload runs at.
var sizes = []int{10_000, 100_000, 1_000_000, 10_000_000}

// impl is one timer implementation under benchmark. Each runs the hot loop
// of every workload itself, calling its own timer type directly as an
// application would: through an interface or a type parameter, every call
// would be an indirect call the compiler cannot inline, a cost no real
// program pays.
type impl interface {
	// fill creates n items and schedules each one's timer between 29 and
	// 30 s ahead, as if each had been re-armed within the last second.
	fill(n int)
	// churn re-arms a random timer 30 s ahead per op (see package doc).
	churn(b *testing.B)
	// scheduleCancel cancels a random timer and schedules it again 30 s
	// ahead per op.
	scheduleCancel(b *testing.B)
	// expire creates n items, then per op schedules all their timers within
	// the next second and fires them all.
	expire(b *testing.B, n int)
	// fired returns how many timers have fired so far.
	fired() int64
	// stop cancels every timer, so that none outlives the benchmark.
	stop()
}

// impls lists the implementations, named as in the benchmark names.
var impls = []struct {
	name string
	make func() impl
}{
	{"hashed", newHashed},
	{"wheel", newWheel},
	{"list", newList},
	{"timer-reset", newTimerReset},
	{"afterfunc", newAfterFunc},
	{"heap", newHeap},
}

// shortMax is the largest size run under -short, which CI can use to check
// that the benchmarks still run without spending a minute on the largest.
const shortMax = 1_000_000

// matrix runs f as sub-benchmarks impl=<name>/n=<size>.
func matrix(b *testing.B, f func(b *testing.B, im impl, n int)) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			for _, n := range sizes {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					if testing.Short() && n > shortMax {
						b.Skipf("n > %d under -short", shortMax)
					}
					b.ReportAllocs()
					f(b, im.make(), n)
				})
			}
		})
	}
}

// BenchmarkChurn re-arms a random outstanding timer 30 s ahead per op: the
// idle-timeout pattern, in which nothing fires.
func BenchmarkChurn(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		im.fill(n)
		defer im.stop()
		runtime.GC() // so that the setup's garbage is not collected on the clock
		im.churn(b)
		if f := im.fired(); f != 0 {
			b.Fatalf("%d timers fired during churn, which must fire none", f)
		}
	})
}

// BenchmarkScheduleCancel cancels a random outstanding timer and schedules
// it again 30 s ahead per op: the request-timeout pattern, in which a request
// completes before its deadline and the next one starts.
func BenchmarkScheduleCancel(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		im.fill(n)
		defer im.stop()
		runtime.GC()
		im.scheduleCancel(b)
		if f := im.fired(); f != 0 {
			b.Fatalf("%d timers fired during schedule-cancel, which must fire none", f)
		}
	})
}

// BenchmarkMemory reports the live heap per outstanding timer, item
// included, and times a full runtime.GC() per op with the n timers
// outstanding.
//
// It is declared, and so runs, before BenchmarkExpire: the
// expiries of time.AfterFunc timers each start a goroutine, and the runtime
// never frees goroutine descriptors, so every later full GC would scan the
// hundreds of thousands that Expire leaves behind and time them for
// whichever implementation came next.
func BenchmarkMemory(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		before := liveHeap()
		im.fill(n)
		defer im.stop()
		perTimer := float64(liveHeap()-before) / float64(n)
		for b.Loop() {
			runtime.GC()
		}
		b.ReportMetric(perTimer, "bytes/timer")
	})
}

// BenchmarkExpire schedules n timers due within the next second and fires
// them all per op, and reports the time per timer and expiries per second.
func BenchmarkExpire(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		defer im.stop()
		im.expire(b, n)
		timers := float64(b.N) * float64(n)
		if f := im.fired(); f != int64(timers) {
			b.Fatalf("%d timers fired, want %.0f", f, timers)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/timers, "ns/timer")
		b.ReportMetric(timers/b.Elapsed().Seconds(), "expiries/s")
	})
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

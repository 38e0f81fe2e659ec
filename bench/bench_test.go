package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
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
	// churn re-arms a random timer 30 s ahead per op (see package doc);
	// with a nil b it runs the settling ops alone (picker.settle).
	churn(b *testing.B)
	// scheduleCancel cancels a random timer and schedules it again 30 s
	// ahead per op; with a nil b it runs the settling ops alone.
	scheduleCancel(b *testing.B)
	// fired returns how many timers have fired so far.
	fired() int64
	// stop cancels every timer and ends the implementation's goroutines,
	// so that nothing outlives the benchmark.
	stop()
	// aim readies churn and scheduleCancel to pick items warm or cold
	// (see picker) and to run their settling ops (settleShare), after fill.
	aim(warm bool)
	// drive makes the implementation run on the real clock by itself
	// until stop is called, as a server would run it; the virtual-clock
	// ones start a goroutine for it (see virtual.driveWith), the others
	// already have theirs.
	drive() (stop func())
}

// expirer is an implementation that runs Expire: all but the peers.
type expirer interface {
	// expire creates n items, then per op schedules all their timers within
	// the next second and fires them all.
	expire(b *testing.B, n int)
}

// impls lists the implementations, named as in the benchmark names: packwheel's
// wheels, the list wheel and the ways the standard library offers, then the
// Go timer libraries (the peers), each used the cheapest way it offers to
// move a timer. The peers run up to peerMax timers.
var impls = []struct {
	name string
	make func() impl
	peer bool
}{
	{"hashed", newHashed, false},
	{"wheel", newWheel, false},
	{"list", newList, false},
	{"timer-reset", newTimerReset, false},
	{"afterfunc", newAfterFunc, false},
	{"heap", newHeap, false},
	{"gtimer", newGtimer, true},
	{"antlabs", newAntlabs, true},
	{"antlabs-heap", newAntlabsHeap, true},
	{"timingwheel", newTimingWheel, true},
	{"go-zero", newGoZero, true},
	{"go-timewheel", newTimeWheel, true},
}

// peerMax is the most timers a peer runs with: 10 million of their
// separately allocated timers take minutes to set up, and the question
// they answer, which library to pick, is settled by then.
const peerMax = 1_000_000

// peerNoExpire is why the peers skip Expire: they tick on their own real
// clocks, at 1 to 10 ms, so a batch due within a second measures their
// tick more than their work. Their work is in Churn and ScheduleCancel.
const peerNoExpire = "the peers run Churn, ScheduleCancel, Memory and IdleCPU"

// shortMax is the largest size run under -short, which CI can use to check
// that the benchmarks still run: the code paths are the same at every size,
// and the sizes above it took CI six minutes of its fifteen.
const shortMax = 100_000

// matrix runs f as sub-benchmarks impl=<name>/n=<size>.
func matrix(b *testing.B, f func(b *testing.B, im impl, n int)) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			for _, n := range sizes {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					if testing.Short() && n > shortMax {
						b.Skipf("n > %d under -short", shortMax)
					}
					if im.peer && n > peerMax {
						b.Skipf("peers run up to n=%d", peerMax)
					}
					b.ReportAllocs()
					f(b, im.make(), n)
				})
			}
		})
	}
}

// BenchmarkChurn re-arms a random outstanding timer 30 s ahead per op: the
// idle-timeout pattern, in which nothing fires. The item is cold: its
// struct is in cache only as far as n random ones fit. n/8 ops run before
// the clock starts (settleShare), as in ScheduleCancel.
func BenchmarkChurn(b *testing.B) { churn(b, false) }

// BenchmarkChurnWarm is Churn with the item's struct just read, as a
// server has read it when it re-arms a connection's timer (see picker).
func BenchmarkChurnWarm(b *testing.B) { churn(b, true) }

func churn(b *testing.B, warm bool) {
	matrix(b, func(b *testing.B, im impl, n int) {
		im.fill(n)
		defer im.stop()
		im.aim(warm)
		im.churn(nil) // the settling ops (settleShare)
		runtime.GC()  // so that the setup's garbage is not collected on the clock
		cpu := cpuTime()
		im.churn(b)
		reportCPU(b, cpu)
		if f := im.fired(); f != 0 {
			b.Fatalf("%d timers fired during churn, which must fire none", f)
		}
	})
}

// BenchmarkScheduleCancel cancels a random outstanding timer and schedules
// it again 30 s ahead per op: the request-timeout pattern, in which a request
// completes before its deadline and the next one starts. n/8 ops run before
// the clock starts, so that it measures the pattern's steady state rather
// than the move out of fill's layout (settleShare).
//
// Beside the time it reports what the pattern costs in memory, which an
// implementation that keeps a cancelled entry until its deadline pays
// (gtimer's Stop only marks the entry): live-B/timer, the live heap per
// outstanding timer after the ops, item included, to set beside Memory's
// after a fill; and gc-ns/op, the garbage collector's CPU time per op
// (runtime/metrics), which cpu-ns/op includes.
func BenchmarkScheduleCancel(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		before := liveHeap()
		im.fill(n)
		defer im.stop()
		im.aim(false)
		im.scheduleCancel(nil) // the settling ops (settleShare)
		runtime.GC()
		cpu, gc := cpuTime(), gcTime()
		im.scheduleCancel(b)
		b.ReportMetric(float64(gcTime()-gc)/float64(b.N), "gc-ns/op")
		reportCPU(b, cpu)
		b.ReportMetric(float64(liveHeap()-before)/float64(n), "live-B/timer")
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
		ex, ok := im.(expirer)
		if !ok {
			b.Skip(peerNoExpire)
		}
		defer im.stop()
		ex.expire(b, n)
		timers := float64(b.N) * float64(n)
		if f := im.fired(); f != int64(timers) {
			b.Fatalf("%d timers fired, want %.0f", f, timers)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/timers, "ns/timer")
		b.ReportMetric(timers/b.Elapsed().Seconds(), "expiries/s")
	})
}

// BenchmarkIdleCPU reports the CPU time the process burns per second of
// wall time with n timers outstanding, 29 to 30 s ahead, and nothing else
// to do: what an implementation's own goroutines cost while they tick or
// wait. The virtual-clock implementations are driven on the real clock by
// a goroutine that sleeps until NextExpiry's tick and advances to it (see
// virtual.driveWith). One op is idleSlice of sleep.
func BenchmarkIdleCPU(b *testing.B) {
	matrix(b, func(b *testing.B, im impl, n int) {
		im.fill(n)
		defer im.stop()
		stopDriving := im.drive()
		defer stopDriving()
		// A full collection, its sweeping and the return of free memory to
		// the OS now, so that none of it runs in the background while
		// idle is measured.
		debug.FreeOSMemory()
		cpu, wall := cpuTime(), time.Now()
		for b.Loop() {
			time.Sleep(idleSlice)
		}
		b.ReportMetric(float64(cpuTime()-cpu)/time.Since(wall).Seconds(), "cpu-ns/s")
		if f := im.fired(); f != 0 {
			b.Fatalf("%d timers fired while idle, which must fire none", f)
		}
	})
}

// idleSlice is the sleep of one op of IdleCPU. The benchmark's own
// wake-ups cost CPU too, the same for every implementation: they are what
// the rows of the virtual-clock implementations, which have nothing to
// do, show (results.md's IdleCPU table). A long sleep keeps that floor far
// under the peers' tickers, which wake every few ms.
const idleSlice = 100 * time.Millisecond

// cpuTime returns the CPU time, user and system, that the process has
// used so far, in ns: every goroutine's, the runtime's and the peers' own
// included.
func cpuTime() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

// reportCPU reports the CPU time the process used per op since cpuTime
// returned start: ns/op counts the benchmark's goroutine only, while an
// implementation that hands its work to a goroutine of its own does it on
// the other CPU, and one that allocates has the garbage collector's
// workers run there too.
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// gcTime returns the CPU time the garbage collector has used so far, in
// ns, as runtime/metrics estimates it.
func gcTime() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64() * 1e9
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

package bench

import (
	"time"

	"github.com/packwheel/packwheel"
)

// The virtual clock of the wheels and the heap: 1 ms ticks.
const (
	ticksPerSecond = 1000
	timeout        = 30 * ticksPerSecond // churn re-arms this far ahead
	expireWindow   = ticksPerSecond      // expire spreads deadlines over this
)

// warmBatches is how many of Expire's batches run before its clock starts:
// enough to pass the hashed wheel's ring of buckets twice, so that the
// measured batches find all the storage they reuse. The first pass gives
// each bucket the first chunk it keeps once it has held a timer (a single
// warm batch left that pass on the clock: about 100 B a batch at 10k
// timers); in the second, the buckets that took a larger free chunk as
// their first, which they give back, settle (one pass left about 40 KB
// allocated in the seventh batch at 10k timers).
const warmBatches = 2 * (packwheel.DefaultHashedSlots + expireWindow - 1) / expireWindow

// pacer advances virtual time during churn: one tick every n/1000
// operations, so that each of n timers is re-armed about once per simulated
// second, which is both what an idle timeout on a busy connection sees and
// slow enough that a timer left alone for 30 s, and so fires, has a
// negligible chance (e^-30).
type pacer struct{ every, left int }

func newPacer(n int) pacer {
	e := max(1, n/ticksPerSecond)
	return pacer{every: e, left: e}
}

// tick reports whether the clock moves on at this operation.
func (p *pacer) tick() bool {
	p.left--
	if p.left > 0 {
		return false
	}
	p.left = p.every
	return true
}

// virtual is what the virtual-clock implementations share besides their
// timer type: items of type T, the random sequence, the pacer and a count of
// expiries, with the expiry callback made once so that passing it to Advance
// allocates nothing.
//
// Each implementation's loops, in virtual_<impl>_test.go, are generated
// from one template (internal/implgen), so that each calls its
// implementation's concrete methods, which the compiler can inline: one
// generic loop over an interface or a type parameter would pay an indirect
// call per operation, and charge packwheel for the benchmark's structure.
// implgen's TestGenerated fails when they are stale;
// results/adapters-generated.txt sets them beside the hand copies they
// replaced.
type virtual[T any] struct {
	items []T
	picker
	pace  pacer
	fires int64
	count func(*T)
}

func (v *virtual[T]) init(n int) {
	v.items = make([]T, n)
	v.pace = newPacer(n)
	v.count = func(*T) { v.fires++ }
}

func (v *virtual[T]) aim(warm bool) { aim(&v.picker, v.items, warm) }

func (v *virtual[T]) fired() int64 { return v.fires }

// stop has nothing to do: a virtual clock never fires by itself.
func (v *virtual[T]) stop() {}

// never is a NextExpiry limit past any deadline the benchmarks set, and
// no later than packwheel.MaxTick.
const never = 1 << 62

// driveWith starts a goroutine that drives a virtual-clock implementation
// on the real clock, as a server's loop would, until stop is called: it
// sleeps until the tick that next names, one tick per millisecond from
// now, and advances to it. Between its calls nothing else may use the
// implementation; stop returns once the goroutine has.
func (v *virtual[T]) driveWith(now uint64, next func(limit uint64) uint64, advance func(to uint64, expire func(*T))) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			at := next(never)
			var fire <-chan time.Time
			if at != never {
				timer.Reset(time.Until(start.Add(time.Duration(at-now) * realTick)))
				fire = timer.C
			}
			select {
			case <-quit:
				return
			case <-fire:
				advance(at, v.count)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

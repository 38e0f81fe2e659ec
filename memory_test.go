package packwheel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMemoryPerTimer measures the wheel's own memory for a million timers
// with an 8-byte value, 30 s ahead at 1 ms ticks, either bunched within one
// second (a burst of new connections) or spread over the 30 s (timeouts in
// steady state), and checks that firing or cancelling them all gives that
// memory back within two Retain periods.
func TestMemoryPerTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a million timers")
	}
	const n = 1_000_000
	for _, spread := range []int{1000, 30_000} {
		for _, drain := range []string{"fire", "cancel"} {
			for _, k := range []struct {
				name string
				make func() Timers[uint64]
			}{
				{"hashed", func() Timers[uint64] { return NewHashed[uint64](HashedOptions{}) }},
				{"wheel", func() Timers[uint64] { return new(Wheel[uint64]) }},
			} {
				t.Run(fmt.Sprintf("%s/spread=%d/%s", k.name, spread, drain), func(t *testing.T) {
					holders := make([]Holder, n)
					r := rand.New(rand.NewPCG(1, 2))
					w := k.make()
					w.Advance(1_000_000, nil) // start away from tick 0's alignment
					base := heapInUse()
					for i := range holders {
						w.Schedule(&holders[i], w.Now()+30_000+uint64(r.IntN(spread)), uint64(i))
					}
					full := heapInUse()
					perTimer := float64(full-base) / n
					t.Logf("%s: %.1f bytes per timer (holder %d bytes, not counted)", k.name, perTimer, 16)
					require.LessOrEqual(t, perTimer, 40.0, "wheel bytes per timer")

					if drain == "fire" {
						w.Advance(w.Now()+70_000, func(uint64) {})
					} else {
						for i := range holders {
							w.Cancel(&holders[i])
						}
					}
					require.Zero(t, w.Len())
					idle(w, 2*Retain)
					after := heapInUse()
					t.Logf("%s: %d KiB kept after the burst drained (was %d KiB)", k.name, (int64(after)-int64(base))>>10, (full-base)>>10)
					require.Less(t, int64(after)-int64(base), int64(1<<20), "memory not given back")
					runtime.KeepAlive(holders)
				})
			}
		}
	}
}

// TestHolderSize pins the per-connection cost a caller embeds.
func TestHolderSize(t *testing.T) {
	require.Equal(t, uintptr(16), unsafe.Sizeof(Holder{}))
}

// TestHashedMemoryPerSlot pins what NewHashed's documentation says a slot
// costs: its bucket, 32 bytes (the slice of its tail chunk's live entries,
// the tail chunk's number and the count of its places, units), and its
// occupancy bit.
func TestHashedMemoryPerSlot(t *testing.T) {
	const slots = 1 << 16
	base := heapInUse()
	w := NewHashed[uint64](HashedOptions{Slots: slots})
	perSlot := float64(heapInUse()-base) / slots
	t.Logf("%.2f bytes a slot", perSlot)
	require.InDelta(t, 32.125, perSlot, 0.5)
	runtime.KeepAlive(w)
}

// TestMemoryAfterBurstWithSurvivors checks that a burst which fires gives its
// memory back even when long-lived timers share its buckets.
func TestMemoryAfterBurstWithSurvivors(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a million timers")
	}
	const burst, survivors = 1_000_000, 50_000
	for _, k := range []struct {
		name string
		make func() Timers[uint64]
	}{
		{"hashed", func() Timers[uint64] { return NewHashed[uint64](HashedOptions{Slots: 256}) }},
		{"wheel", func() Timers[uint64] { return new(Wheel[uint64]) }},
	} {
		t.Run(k.name, func(t *testing.T) {
			w := k.make()
			holders := make([]Holder, burst+survivors)
			base := heapInUse()
			for i := range holders[:survivors] { // in every bucket, revolutions away
				w.Schedule(&holders[i], 1000+uint64(i%256+256*(2+i%100)), 0)
			}
			withSurvivors := heapInUse()
			for i := range holders[survivors:] {
				w.Schedule(&holders[survivors+i], 1000+uint64(i%256), 0)
			}
			w.Advance(1300, nil)
			require.Equal(t, survivors, w.Len())
			idle(w, 2*Retain)
			after := heapInUse()
			t.Logf("%s: %d KiB for the survivors, %d KiB after the burst fired",
				k.name, (withSurvivors-base)>>10, (int64(after)-int64(base))>>10)
			require.Less(t, int64(after)-int64(withSurvivors), int64(2<<20), "burst memory not given back")
			runtime.KeepAlive(holders)
			runtime.KeepAlive(w) // else the collector takes the whole wheel
		})
	}
}

// idle advances w by ticks, a 64th of Retain at a time, as a server's
// loop advances its wheel while nothing is due.
func idle[V any](w Timers[V], ticks uint64) {
	for end := w.Now() + ticks; w.Now() < end; {
		w.Advance(min(w.Now()+Retain/64, end), nil)
	}
}

// TestMemoryAfterBurst checks the promise of Retain: a burst of timers that
// fires leaves its chunks with the wheel, so that a wave that returns
// within Retain ticks allocates nothing, and once no timer has needed
// them for two periods they go back to the garbage collector. One timer
// far off stays throughout, as a server's longest timeout would: the
// hierarchical wheel then knows that nothing is due for long and takes
// its quiet path through the idle ticks, which must give the chunks back
// all the same (quietUntil).
func TestMemoryAfterBurst(t *testing.T) {
	if raceEnabled {
		t.Skip("counts allocations")
	}
	const burst = 200_000
	for _, k := range defaultWheelKinds {
		t.Run(k.name, func(t *testing.T) {
			w := k.make()
			var far conn
			w.Schedule(&far.timer, 1<<30, &far)
			conns := make([]conn, burst)
			wave := func() {
				now := w.Now()
				for i := range conns {
					w.Schedule(&conns[i].timer, now+1+uint64(i)%1000, &conns[i])
				}
				w.Advance(now+1000, nil)
			}
			base := heapInUse()
			wave()
			held := heapInUse()
			idle(w, Retain-1000)
			// The wave's first return, counted (testing.AllocsPerRun
			// would count its second, a hashed wheel's on 1000 buckets
			// the burst did not use, whose first chunks the promise of
			// Retain does not cover: README's Limitations).
			require.Zero(t, mallocs(wave), "a wave that returns within Retain")
			idle(w, 2*Retain)
			after := heapInUse()
			t.Logf("%s: %d KiB held after the burst, %d KiB two periods on", k.name, (int64(held)-int64(base))>>10, (int64(after)-int64(base))>>10)
			require.Greater(t, int64(held)-int64(base), int64(burst*24), "the chunks were kept")
			// What stays: the first chunk of each bucket the burst used,
			// with its size's headroom (packed.Headroom): a hashed wheel's
			// 1000, of 8 entries, 192 bytes each; a hierarchical wheel's 64
			// of level 0, wide, of 64 entries (1,536 bytes), and fewer than
			// 64 of level 1, of 8; and the table of chunks, 20 bytes for
			// each chunk the burst used, in slices grown by doubling: under
			// an eighth of it all.
			require.Less(t, int64(after)-int64(base), int64(held-base)/8, "the chunks went back")
			require.Equal(t, 1, w.Len(), "the far timer stays")
			runtime.KeepAlive(w)
			runtime.KeepAlive(conns)
		})
	}
}

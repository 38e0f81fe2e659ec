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
// memory back.
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
			after := heapInUse()
			t.Logf("%s: %d KiB for the survivors, %d KiB after the burst fired",
				k.name, (withSurvivors-base)>>10, (int64(after)-int64(base))>>10)
			require.Less(t, int64(after)-int64(withSurvivors), int64(2<<20), "burst memory not given back")
			runtime.KeepAlive(holders)
			runtime.KeepAlive(w) // else the collector takes the whole wheel
		})
	}
}

// TestDrainEndingInACrowd checks that a burst whose last bucket to empty is
// crowded gives its arrays back. That last release keeps the crowd's array
// as an heir, and trimming the shelves only on ordinary releases left them
// at the budget of the live timers before it: a hashed wheel kept 300,000
// entries of spare arrays (7 MB) with no timer left.
func TestDrainEndingInACrowd(t *testing.T) {
	for _, k := range []struct {
		name   string
		make   func() Timers[int]
		arrays func(Timers[int]) *arrays[int]
	}{
		{"hashed", func() Timers[int] { return new(Hashed[int]) },
			func(w Timers[int]) *arrays[int] { return &w.(*Hashed[int]).s.arrays }},
		{"wheel", func() Timers[int] { return new(Wheel[int]) },
			func(w Timers[int]) *arrays[int] { return &w.(*Wheel[int]).s.arrays }},
	} {
		t.Run(k.name, func(t *testing.T) {
			w := k.make()
			const buckets, each, crowd = 3000, 100, 200_000
			holders := make([]Holder, buckets*each+crowd)
			for i := range holders[:buckets*each] {
				w.Schedule(&holders[i], 1+uint64(i/each), i)
			}
			for i := buckets * each; i < len(holders); i++ {
				w.Schedule(&holders[i], buckets+1, i)
			}
			w.Advance(buckets+1, nil)
			require.Zero(t, w.Len())
			// The shelf may keep half of spareFloor, the empty buckets keptFloor.
			require.LessOrEqual(t, k.arrays(w).spare(), spareFloor/2+keptFloor, "spare entries with no timer left")
		})
	}
}

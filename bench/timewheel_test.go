package bench

import (
	"testing"

	timewheel "github.com/rfyiamcool/go-timewheel"
)

// timeWheelImpl benchmarks rfyiamcool/go-timewheel, a hashed wheel of maps
// under one mutex, ticking every realTick with peerSlots slots. Its
// Timer.Reset marks the old task stopped without the lock, a data race,
// and leaves it in its map until its slot comes round, so both workloads
// use its task API instead: Remove takes a task out under the lock, and
// Add makes a new one.
type timeWheelImpl struct {
	peerBase[*timewheel.Task]
	tw *timewheel.TimeWheel
}

func newTimeWheel() impl { return new(timeWheelImpl) }

func (s *timeWheelImpl) fill(n int) {
	tw, err := timewheel.NewTimeWheel(realTick, peerSlots)
	if err != nil {
		panic(err)
	}
	s.tw = tw
	tw.Start()
	s.items = make([]peerItem[*timewheel.Task], n)
	for i := range s.items {
		s.items[i] = peerItem[*timewheel.Task]{t: tw.Add(s.fillDelay(), s.onFire), id: i}
	}
}

func (s *timeWheelImpl) churn(b *testing.B) {
	tw, items, fire := s.tw, s.items, s.onFire
	for s.settle() {
		it := &items[s.pick(len(items))]
		must(tw.Remove(it.t))
		it.t = tw.Add(realTimeout, fire)
	}
	if b == nil {
		return
	}
	for b.Loop() {
		it := &items[s.pick(len(items))]
		must(tw.Remove(it.t))
		it.t = tw.Add(realTimeout, fire)
	}
}

// scheduleCancel is churn: a task cannot be moved.
func (s *timeWheelImpl) scheduleCancel(b *testing.B) { s.churn(b) }

func (s *timeWheelImpl) stop() {
	for _, it := range s.items {
		must(s.tw.Remove(it.t))
	}
	s.tw.Stop()
}

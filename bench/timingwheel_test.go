package bench

import (
	"testing"

	"github.com/RussellLuo/timingwheel"
)

// timingWheelImpl benchmarks RussellLuo/timingwheel, Kafka's design: a
// hierarchical wheel of locked lists whose buckets wait in a delay queue,
// ticking every realTick with peerSlots slots per level. It cannot move a
// timer: both workloads stop it and make a new one with AfterFunc.
type timingWheelImpl struct {
	peerBase[*timingwheel.Timer]
	tw *timingwheel.TimingWheel
}

func newTimingWheel() impl { return new(timingWheelImpl) }

func (s *timingWheelImpl) fill(n int) {
	s.tw = timingwheel.NewTimingWheel(realTick, peerSlots)
	s.tw.Start()
	s.items = make([]peerItem[*timingwheel.Timer], n)
	for i := range s.items {
		s.items[i] = peerItem[*timingwheel.Timer]{t: s.tw.AfterFunc(s.fillDelay(), s.onFire), id: i}
	}
}

func (s *timingWheelImpl) churn(b *testing.B) { renew(b, &s.peerBase, s.tw.AfterFunc) }

// scheduleCancel is churn: a timer cannot be moved.
func (s *timingWheelImpl) scheduleCancel(b *testing.B) { s.churn(b) }

func (s *timingWheelImpl) stop() {
	for _, it := range s.items {
		it.t.Stop()
	}
	s.tw.Stop()
}

package bench

import (
	"testing"
	"time"
)

// afterFunc benchmarks time.AfterFunc and Timer.Stop, a new timer per
// schedule: the way most code uses timers.
type afterFunc struct{ runtimeTimers }

func newAfterFunc() impl { return new(afterFunc) }

func (s *afterFunc) churn(b *testing.B) {
	items := s.items
	for s.settle() {
		it := &items[s.pick(len(items))]
		it.t.Stop()
		it.t = time.AfterFunc(realTimeout, it.fire)
	}
	if b == nil {
		return
	}
	for b.Loop() {
		it := &items[s.pick(len(items))]
		it.t.Stop()
		it.t = time.AfterFunc(realTimeout, it.fire)
	}
}

// scheduleCancel is churn: an AfterFunc timer cannot be moved, so re-arming
// one already is a cancel and a schedule.
func (s *afterFunc) scheduleCancel(b *testing.B) { s.churn(b) }

func (s *afterFunc) expire(b *testing.B, n int) {
	s.init(n)
	items := s.items
	for b.Loop() {
		s.expect(n)
		for i := range items {
			it := &items[i]
			it.t = time.AfterFunc(s.expireDelay(), it.fire)
		}
		s.await()
	}
}

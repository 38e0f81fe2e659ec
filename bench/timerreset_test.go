package bench

import (
	"testing"
	"time"
)

// timerReset benchmarks time.Timer moved with Reset, the zero-allocation way
// to use the runtime's timers.
//
// Its timers are made with time.AfterFunc. Since Go 1.23 a channel timer
// (time.NewTimer) stays out of the runtime's timer heap until a goroutine
// blocks on its channel, so resetting one that nobody waits on would
// measure a field update, not the timer a server with a goroutine per
// connection pays for; a function timer is always in the heap.
type timerReset struct{ runtimeTimers }

func newTimerReset() impl { return new(timerReset) }

func (s *timerReset) churn(b *testing.B) {
	items := s.items
	for s.settle() {
		items[s.pick(len(items))].t.Reset(realTimeout)
	}
	if b == nil {
		return
	}
	for b.Loop() {
		items[s.pick(len(items))].t.Reset(realTimeout)
	}
}

func (s *timerReset) scheduleCancel(b *testing.B) {
	items := s.items
	for s.settle() {
		t := items[s.pick(len(items))].t
		t.Stop()
		t.Reset(realTimeout)
	}
	if b == nil {
		return
	}
	for b.Loop() {
		t := items[s.pick(len(items))].t
		t.Stop()
		t.Reset(realTimeout)
	}
}

func (s *timerReset) expire(b *testing.B, n int) {
	s.init(n)
	for i := range s.items {
		it := &s.items[i]
		it.t = time.AfterFunc(time.Hour, it.fire)
		it.t.Stop()
	}
	items := s.items
	for b.Loop() {
		s.expect(n)
		for i := range items {
			items[i].t.Reset(s.expireDelay())
		}
		s.await()
	}
}

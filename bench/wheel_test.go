package bench

import (
	"testing"

	"github.com/packwheel/packwheel"
)

// wheelItem is a benchmark item for both of packwheel's wheels: the Holder embedded by
// value, as in a connection struct.
type wheelItem struct {
	h  packwheel.Holder
	id int
}

// wheelImpl benchmarks packwheel's hierarchical Wheel.
type wheelImpl struct {
	virtual[wheelItem]
	w *packwheel.Wheel[*wheelItem]
}

func newWheel() impl { return &wheelImpl{w: new(packwheel.Wheel[*wheelItem])} }

func (s *wheelImpl) fill(n int) {
	s.init(n)
	w := s.w
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		w.Schedule(&it.h, w.Now()+timeout-uint64(s.rng.below(ticksPerSecond)), it)
	}
}

func (s *wheelImpl) churn(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Schedule(&it.h, w.Now()+timeout, it)
	}
}

func (s *wheelImpl) scheduleCancel(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Cancel(&it.h)
		w.Schedule(&it.h, w.Now()+timeout, it)
	}
}

func (s *wheelImpl) expire(b *testing.B, n int) {
	s.init(n)
	w, items := s.w, s.items
	for b.Loop() {
		now := w.Now()
		for i := range items {
			it := &items[i]
			w.Schedule(&it.h, now+1+uint64(s.rng.below(expireWindow)), it)
		}
		w.Advance(now+expireWindow, s.count)
	}
}

func (s *wheelImpl) drive() (stop func()) { return s.driveWith(s.w.Now(), s.w.NextExpiry, s.w.Advance) }

package bench

import (
	"testing"

	"github.com/packwheel/packwheel"
)

// hashedImpl benchmarks packwheel.Hashed with its default 4096 slots.
type hashedImpl struct {
	virtual[wheelItem]
	w *packwheel.Hashed[*wheelItem]
}

func newHashed() impl {
	return &hashedImpl{w: packwheel.NewHashed[*wheelItem](packwheel.HashedOptions{})}
}

func (s *hashedImpl) fill(n int) {
	s.init(n)
	w := s.w
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		w.Schedule(&it.h, w.Now()+timeout-uint64(s.rng.below(ticksPerSecond)), it)
	}
}

func (s *hashedImpl) churn(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Schedule(&it.h, w.Now()+timeout, it)
	}
}

func (s *hashedImpl) scheduleCancel(b *testing.B) {
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

func (s *hashedImpl) expire(b *testing.B, n int) {
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

func (s *hashedImpl) drive() (stop func()) {
	return s.driveWith(s.w.Now(), s.w.NextExpiry, s.w.Advance)
}

package bench

import (
	"testing"

	"github.com/packwheel/packwheel/bench/internal/minheap"
)

// heapItem is a benchmark item for the heap, its handle embedded by value.
type heapItem struct {
	h  minheap.Item
	id int
}

// heapImpl benchmarks the container/heap baseline, on the same virtual clock
// as the wheels.
type heapImpl struct {
	virtual[heapItem]
	w *minheap.Heap[*heapItem]
}

func newHeap() impl { return &heapImpl{w: new(minheap.Heap[*heapItem])} }

func (s *heapImpl) fill(n int) {
	s.init(n)
	w := s.w
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		w.Schedule(&it.h, w.Now()+timeout-uint64(s.rng.below(ticksPerSecond)), it)
	}
}

func (s *heapImpl) churn(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Schedule(&it.h, w.Now()+timeout, it)
	}
}

func (s *heapImpl) scheduleCancel(b *testing.B) {
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

func (s *heapImpl) expire(b *testing.B, n int) {
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

func (s *heapImpl) drive() (stop func()) { return s.driveWith(s.w.Now(), s.w.NextExpiry, s.w.Advance) }

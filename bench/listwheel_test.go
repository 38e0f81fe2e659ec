package bench

import (
	"testing"

	"github.com/packwheel/packwheel/bench/internal/listwheel"
)

// listItem is an item with the list wheel's node embedded, as a caller of
// an intrusive list wheel would have it.
type listItem struct {
	n  listwheel.Node[*listItem]
	id int
}

// listImpl benchmarks the classic design packwheel's packed buckets
// replace: a hierarchical wheel of intrusive doubly-linked lists
// (internal/listwheel).
type listImpl struct {
	virtual[listItem]
	w *listwheel.Wheel[*listItem]
}

func newList() impl { return &listImpl{w: new(listwheel.Wheel[*listItem])} }

func (s *listImpl) fill(n int) {
	s.init(n)
	w := s.w
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		w.Schedule(&it.n, w.Now()+timeout-uint64(s.rng.below(ticksPerSecond)), it)
	}
}

func (s *listImpl) churn(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Schedule(&it.n, w.Now()+timeout, it)
	}
}

func (s *listImpl) scheduleCancel(b *testing.B) {
	w, items := s.w, s.items
	for b.Loop() {
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Cancel(&it.n)
		w.Schedule(&it.n, w.Now()+timeout, it)
	}
}

func (s *listImpl) expire(b *testing.B, n int) {
	s.init(n)
	w, items := s.w, s.items
	for b.Loop() {
		now := w.Now()
		for i := range items {
			it := &items[i]
			w.Schedule(&it.n, now+1+uint64(s.rng.below(expireWindow)), it)
		}
		w.Advance(now+expireWindow, s.count)
	}
}

func (s *listImpl) drive() (stop func()) { return s.driveWith(s.w.Now(), s.w.NextExpiry, s.w.Advance) }

package bench

import (
	"testing"

	"github.com/zeromicro/go-zero/core/collection"
)

// goZeroImpl benchmarks go-zero's collection.TimingWheel, a hashed wheel
// of lists with a round count per timer, ticking every realTick with
// peerSlots slots. Every call is a message on an unbuffered channel to the
// wheel's goroutine, which does the work: a call returns once that
// goroutine has taken it, and its work overlaps the caller's next call on
// the other CPU (cpu-ns/op counts both). A timer moves with MoveTimer; a
// cancel is RemoveTimer. The items' pointers are the keys, which convert
// to an interface without allocating.
type goZeroImpl struct {
	peerBase[struct{}]
	tw *collection.TimingWheel
}

func newGoZero() impl { return new(goZeroImpl) }

func (s *goZeroImpl) fill(n int) {
	tw, err := collection.NewTimingWheel(realTick, peerSlots, func(_, _ any) { s.onFire() })
	if err != nil {
		panic(err)
	}
	s.tw = tw
	s.items = make([]peerItem[struct{}], n)
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		must(tw.SetTimer(it, it, s.fillDelay()))
	}
}

func (s *goZeroImpl) churn(b *testing.B) {
	tw, items := s.tw, s.items
	for s.settle() {
		must(tw.MoveTimer(&items[s.pick(len(items))], realTimeout))
	}
	if b == nil {
		return
	}
	for b.Loop() {
		must(tw.MoveTimer(&items[s.pick(len(items))], realTimeout))
	}
}

func (s *goZeroImpl) scheduleCancel(b *testing.B) {
	tw, items := s.tw, s.items
	for s.settle() {
		it := &items[s.pick(len(items))]
		must(tw.RemoveTimer(it))
		must(tw.SetTimer(it, it, realTimeout))
	}
	if b == nil {
		return
	}
	for b.Loop() {
		it := &items[s.pick(len(items))]
		must(tw.RemoveTimer(it))
		must(tw.SetTimer(it, it, realTimeout))
	}
}

func (s *goZeroImpl) stop() { s.tw.Stop() }

// must panics on a peer's error, which the benchmarks never provoke.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

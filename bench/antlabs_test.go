package bench

import (
	"testing"

	"github.com/antlabs/timer"
)

// antlabsImpl benchmarks antlabs/timer, in its default form, a
// hierarchical wheel of locked lists with a fixed 10 ms tick (antlabs) or
// in its min-heap form (antlabs-heap).
//
// In the wheel, TimeNoder.Reset of a timer that lands in the list it is
// already in locks that list's mutex twice and deadlocks, which a 30 s
// timer re-armed within its slot's span does; so both of the wheel's
// workloads stop the timer and make a new one. In the heap, Reset moves a
// timer in place (heap.Fix under the heap's mutex); a stopped node must
// not be stopped or reset again (a second Stop removes whatever node
// took its index), so a cancel there is also followed by a new timer.
type antlabsImpl struct {
	peerBase[timer.TimeNoder]
	tw   timer.Timer
	heap bool
}

func newAntlabs() impl     { return new(antlabsImpl) }
func newAntlabsHeap() impl { return &antlabsImpl{heap: true} }

func (s *antlabsImpl) fill(n int) {
	if s.heap {
		s.tw = timer.NewTimer(timer.WithMinHeap())
	} else {
		s.tw = timer.NewTimer(timer.WithTimeWheel())
	}
	go s.tw.Run()
	s.items = make([]peerItem[timer.TimeNoder], n)
	for i := range s.items {
		s.items[i] = peerItem[timer.TimeNoder]{t: s.tw.AfterFunc(s.fillDelay(), s.onFire), id: i}
	}
}

func (s *antlabsImpl) churn(b *testing.B) {
	if !s.heap {
		s.scheduleCancel(b)
		return
	}
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

func (s *antlabsImpl) scheduleCancel(b *testing.B) { renew(b, &s.peerBase, s.tw.AfterFunc) }

func (s *antlabsImpl) stop() {
	for _, it := range s.items {
		it.t.Stop()
	}
	s.tw.Stop()
}

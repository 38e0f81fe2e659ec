package bench

import (
	"context"
	"testing"

	"github.com/gogf/gf/v2/os/gtimer"
)

// gtimerImpl benchmarks GoFrame's gtimer, ticking every realTick. Its
// cheapest way to move a timer is Entry.Reset, one atomic store of the
// entry's next tick: the entry stays where it is in the timer's heap, and
// the timer's goroutine puts it back in place when it surfaces. Reset
// re-arms by the entry's own interval, so fill gives every entry 30 s
// rather than 29 to 30. A cancel is Entry.Stop, a status the goroutine
// reads when the entry surfaces; Start and Reset arm it again.
type gtimerImpl struct {
	peerBase[*gtimer.Entry]
	tw *gtimer.Timer
}

func newGtimer() impl { return new(gtimerImpl) }

func (s *gtimerImpl) fill(n int) {
	s.tw = gtimer.New(gtimer.TimerOptions{Interval: realTick})
	s.items = make([]peerItem[*gtimer.Entry], n)
	job := func(context.Context) { s.onFire() }
	ctx := context.Background()
	for i := range s.items {
		s.items[i] = peerItem[*gtimer.Entry]{t: s.tw.AddOnce(ctx, realTimeout, job), id: i}
	}
}

func (s *gtimerImpl) churn(b *testing.B) {
	items := s.items
	for s.settle() {
		items[s.pick(len(items))].t.Reset()
	}
	if b == nil {
		return
	}
	for b.Loop() {
		items[s.pick(len(items))].t.Reset()
	}
}

func (s *gtimerImpl) scheduleCancel(b *testing.B) {
	items := s.items
	for s.settle() {
		e := items[s.pick(len(items))].t
		e.Stop()
		e.Reset()
		e.Start()
	}
	if b == nil {
		return
	}
	for b.Loop() {
		e := items[s.pick(len(items))].t
		e.Stop()
		e.Reset()
		e.Start()
	}
}

func (s *gtimerImpl) stop() {
	for _, it := range s.items {
		it.t.Close()
	}
	s.tw.Close()
}

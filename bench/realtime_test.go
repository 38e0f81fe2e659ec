package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The real-clock implementations' equivalents of the virtual clock's
// durations.
const (
	realTimeout = 30 * time.Second
	// realExpireWindow is short, unlike expireWindow: real timers spread over
	// a second would make an Expire run last a second whatever the runtime's
	// speed, so their deadlines fall within a millisecond and a run measures
	// how fast the runtime schedules and fires them.
	realExpireWindow = time.Millisecond
	// realTick is the tick the peers that ask for one are given: the
	// virtual clock's 1 ms. peerSlots is the slot count of those that ask
	// for one.
	realTick  = time.Millisecond
	peerSlots = 1024
)

// realClock is what the implementations on the real clock share: the
// picker and a count of the expiries, which run on goroutines of their own,
// with a WaitGroup that Expire waits on. Nothing drives them but their own
// goroutines, so idle costs them nothing to set up.
type realClock struct {
	picker
	fires atomic.Int64
	// due is how many expiries Expire has asked for so far; only those are
	// counted down on wg, so that a stray expiry during Churn (which would
	// mean the benchmark is broken) is counted, not a panic.
	due atomic.Int64
	wg  sync.WaitGroup
}

func (r *realClock) onFire() {
	if r.fires.Add(1) <= r.due.Load() {
		r.wg.Done()
	}
}

// expect announces n expiries that await will wait for.
func (r *realClock) expect(n int) {
	r.due.Add(int64(n))
	r.wg.Add(n)
}

func (r *realClock) await() { r.wg.Wait() }

func (r *realClock) fired() int64 { return r.fires.Load() }

func (r *realClock) drive() (stop func()) { return func() {} }

// fillDelay returns a delay between 29 and 30 s, as fill gives each timer.
func (r *realClock) fillDelay() time.Duration {
	return realTimeout - time.Duration(r.rng.below(int(time.Second)))
}

// peerItem is a benchmark item of a peer library: the caller's struct,
// holding the peer's handle of the item's timer.
type peerItem[H any] struct {
	t  H
	id int
}

// peerBase is what a peer's implementation has besides the peer itself.
type peerBase[H any] struct {
	realClock
	items []peerItem[H]
}

func (p *peerBase[H]) aim(warm bool) { aim(&p.picker, p.items, warm) }

// renew is the loop of a peer whose timers cannot be moved, or not
// safely: per op it stops a random item's timer and makes it a new one
// with after. after is a method value, an indirect call that costs next to
// nothing beside the hundreds of ns these peers take.
func renew[H interface{ Stop() bool }](b *testing.B, p *peerBase[H], after func(time.Duration, func()) H) {
	items, fire := p.items, p.onFire
	for p.settle() {
		it := &items[p.pick(len(items))]
		it.t.Stop()
		it.t = after(realTimeout, fire)
	}
	if b == nil {
		return
	}
	for b.Loop() {
		it := &items[p.pick(len(items))]
		it.t.Stop()
		it.t = after(realTimeout, fire)
	}
}

// timerItem is a benchmark item for the time.Timer baselines.
type timerItem struct {
	t *time.Timer
	// fire is the timer's callback, bound to the item and made once, as a
	// connection's method value would be.
	fire func()
	set  *runtimeTimers
	id   int
}

func (it *timerItem) onFire() { it.set.onFire() }

// runtimeTimers is what the time.Timer baselines share: their items.
type runtimeTimers struct {
	realClock
	items []timerItem
}

func (r *runtimeTimers) aim(warm bool) { aim(&r.picker, r.items, warm) }

func (r *runtimeTimers) init(n int) {
	r.items = make([]timerItem, n)
	for i := range r.items {
		it := &r.items[i]
		it.set, it.id = r, i
		it.fire = it.onFire
	}
}

// fill arms every item's timer with time.AfterFunc.
func (r *runtimeTimers) fill(n int) {
	r.init(n)
	for i := range r.items {
		it := &r.items[i]
		it.t = time.AfterFunc(r.fillDelay(), it.fire)
	}
}

// expireDelay returns a random delay within the expire window.
func (r *runtimeTimers) expireDelay() time.Duration {
	return time.Duration(r.rng.below(int(realExpireWindow)))
}

func (r *runtimeTimers) stop() {
	for i := range r.items {
		if t := r.items[i].t; t != nil {
			t.Stop()
		}
	}
}

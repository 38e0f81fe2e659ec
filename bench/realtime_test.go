package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// The time.Timer baselines' equivalents of the virtual clock's durations.
const (
	realTimeout = 30 * time.Second
	// realExpireWindow is short, unlike expireWindow: real timers spread over
	// a second would make an Expire run last a second whatever the runtime's
	// speed, so their deadlines fall within a millisecond and a run measures
	// how fast the runtime schedules and fires them.
	realExpireWindow = time.Millisecond
)

// timerItem is a benchmark item for the time.Timer baselines.
type timerItem struct {
	t *time.Timer
	// fire is the timer's callback, bound to the item and made once, as a
	// connection's method value would be.
	fire func()
	set  *realTime
	id   int
}

func (it *timerItem) onFire() { it.set.onFire() }

// realTime is what the time.Timer baselines share: the items, the random
// sequence, and a count of the expiries, which run on goroutines of their
// own, with a WaitGroup that Expire waits on.
type realTime struct {
	items []timerItem
	rng   rng
	fires atomic.Int64
	// due is how many expiries Expire has asked for so far; only those are
	// counted down on wg, so that a stray expiry during Churn (which would
	// mean the benchmark is broken) is counted, not a panic.
	due atomic.Int64
	wg  sync.WaitGroup
}

func (r *realTime) init(n int) {
	r.items = make([]timerItem, n)
	for i := range r.items {
		it := &r.items[i]
		it.set, it.id = r, i
		it.fire = it.onFire
	}
}

func (r *realTime) onFire() {
	if r.fires.Add(1) <= r.due.Load() {
		r.wg.Done()
	}
}

// expect announces n expiries that await will wait for.
func (r *realTime) expect(n int) {
	r.due.Add(int64(n))
	r.wg.Add(n)
}

func (r *realTime) await() { r.wg.Wait() }

// fill arms every item's timer with time.AfterFunc.
func (r *realTime) fill(n int) {
	r.init(n)
	for i := range r.items {
		it := &r.items[i]
		it.t = time.AfterFunc(realTimeout-time.Duration(r.rng.below(int(time.Second))), it.fire)
	}
}

// expireDelay returns a random delay within the expire window.
func (r *realTime) expireDelay() time.Duration {
	return time.Duration(r.rng.below(int(realExpireWindow)))
}

func (r *realTime) fired() int64 { return r.fires.Load() }

func (r *realTime) stop() {
	for i := range r.items {
		if t := r.items[i].t; t != nil {
			t.Stop()
		}
	}
}

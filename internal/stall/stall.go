// Package stall measures how late the process's goroutines are woken, so
// that a test of a wall-clock bound can tell a late timer from a starved
// process: on a loaded machine a goroutine can wait tens of milliseconds
// for a CPU, and no code can close a connection while it is not running.
package stall

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// period is how long the probe sleeps at a time. Short enough to see most
// of any stall that delays a reaper ticking every few milliseconds.
const period = time.Millisecond

// Probe records the longest time a sleeping goroutine was woken late. Make
// one with Watch. Its methods are safe from any goroutine.
type Probe struct {
	worst atomic.Int64 // nanoseconds
	stop  chan struct{}
	done  sync.WaitGroup
}

// Watch starts a probe that runs until the test ends, when it logs the
// worst stall it saw.
func Watch(t testing.TB) *Probe {
	p := &Probe{stop: make(chan struct{})}
	p.done.Add(1)
	go p.run()
	t.Cleanup(func() {
		close(p.stop)
		p.done.Wait()
		t.Logf("worst stall: a goroutine woke %v late", p.Worst())
	})
	return p
}

func (p *Probe) run() {
	defer p.done.Done()
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		start := time.Now()
		time.Sleep(period)
		if late := time.Since(start) - period; late > time.Duration(p.worst.Load()) {
			p.worst.Store(int64(late))
		}
	}
}

// Worst returns the longest a wake-up has come late so far.
func (p *Probe) Worst() time.Duration { return time.Duration(p.worst.Load()) }

package stall

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchSeesStarvation holds the only P with a busy loop: the probe's
// goroutine cannot run until the scheduler preempts the loop (after about
// 10ms), so it wakes late by at least a few milliseconds.
func TestWatchSeesStarvation(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := Watch(t)
	time.Sleep(5 * time.Millisecond) // the probe is asleep
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	time.Sleep(5 * time.Millisecond) // let it wake and record
	require.GreaterOrEqual(t, p.Worst(), 5*time.Millisecond)
}

package stall

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchSeesStarvation holds the only P with a busy loop for 50 ms in
// the middle of 300 ms: the probe's goroutine cannot run until the
// scheduler preempts the loop (after about 10 ms), so it wakes late by at
// least a few milliseconds, and by much less than the 300 ms it watched,
// which a probe measuring anything but its own lateness would report.
func TestWatchSeesStarvation(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := Watch(t)
	time.Sleep(125 * time.Millisecond)
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	time.Sleep(125 * time.Millisecond)
	require.GreaterOrEqual(t, p.Worst(), 5*time.Millisecond)
	require.Less(t, p.Worst(), 200*time.Millisecond)
}

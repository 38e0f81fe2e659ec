//go:build !race

package idleconn

// slowdown stretches the network tests' timeouts under the race detector;
// without it they run at their nominal length.
const slowdown = 1

//go:build race

package idleconn

// slowdown stretches the network tests' timeouts under the race detector,
// which makes the client and server goroutines several times slower: with
// 60 ms timeouts a busy client's 15 ms sends can be late by a whole timeout.
const slowdown = 3

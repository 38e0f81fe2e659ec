//go:build race

package packwheel

// raceEnabled shortens the random tests under the race detector, which
// slows them tenfold and checks nothing here that the plain run does not.
const raceEnabled = true

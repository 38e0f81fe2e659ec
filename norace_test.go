//go:build !race

package packwheel

const raceEnabled = false

// Package monoskew finds pairs of times whose wall-clock and monotonic
// readings disagree, for tests of code that may compare a time carrying a
// monotonic reading with one that lost it: time.Time.Add drops the reading
// past about the year 2157, and Sub then falls back to the wall clock.
package monoskew

import (
	"testing"
	"time"
)

// tries bounds the search. Where time.Now reads the two clocks a few
// nanoseconds apart, as on Linux, about a third of the pairs of
// consecutive calls disagree by 2 ns or more.
const tries = 1_000_000

// Pair returns two times from time.Now, both carrying a monotonic reading,
// such that now is later than origin by at least skew more on the
// monotonic clock than on the wall clock. It skips the test if time.Now
// never shows such a skew here.
func Pair(t testing.TB, skew time.Duration) (origin, now time.Time) {
	t.Helper()
	for range tries {
		a, b := time.Now(), time.Now()
		d := b.Sub(a) - b.Round(0).Sub(a.Round(0)) // monotonic minus wall
		switch {
		case d >= skew:
			return a, b
		case d <= -skew:
			// Swapped, with an hour between them so that now stays the
			// later: Add moves both readings alike.
			return b.Add(-time.Hour), a
		}
	}
	t.Skipf("time.Now showed no skew of %v between its wall and monotonic readings in %d tries", skew, tries)
	return
}

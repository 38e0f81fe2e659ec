package packwheel

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashedEarlierInPlace pins what Hashed.Schedule documents: a timer
// pushed back stays in its bucket under its entry's tick, a timer brought
// earlier but not before that tick stays too, so NextExpiry answers the
// entry's tick, early, and only one brought before it moves.
func TestHashedEarlierInPlace(t *testing.T) {
	w := NewHashed[*conn](HashedOptions{Slots: 64})
	var c conn
	w.Schedule(&c.timer, 100, &c)
	w.Schedule(&c.timer, 200, &c) // pushed back: the entry stays at tick 100
	w.Schedule(&c.timer, 150, &c) // earlier, but not before 100: stays
	require.Equal(t, uint64(150), c.timer.Deadline())
	require.Equal(t, uint64(100), w.NextExpiry(1000), "early: the entry's tick")
	mustCheck(t, w)

	fired := 0
	w.Advance(100, func(*conn) { fired++ })
	require.Zero(t, fired)
	require.Equal(t, uint64(150), w.NextExpiry(1000), "placed by its deadline at tick 100")

	w.Schedule(&c.timer, 120, &c) // before its entry's tick, 150: moves
	require.Equal(t, uint64(120), w.NextExpiry(1000))
	w.Advance(1000, func(*conn) { fired++ })
	require.Equal(t, 1, fired)
	mustCheck(t, w)
}

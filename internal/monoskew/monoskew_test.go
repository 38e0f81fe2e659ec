package monoskew

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPair(t *testing.T) {
	origin, now := Pair(t, 2*time.Nanosecond)
	require.True(t, now.After(origin))
	mono, wall := now.Sub(origin), now.Round(0).Sub(origin.Round(0))
	require.GreaterOrEqual(t, mono-wall, 2*time.Nanosecond, "monotonic %v, wall %v", mono, wall)
}

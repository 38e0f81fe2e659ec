package workunit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGlibcRand checks the first outputs of glibc's rand() after srand(1).
func TestGlibcRand(t *testing.T) {
	g := newGlibcRand()
	var got []uint32
	for range 5 {
		got = append(got, g.next())
	}
	require.Equal(t, []uint32{1804289383, 846930886, 1681692777, 1714636915, 1957747793}, got)
}

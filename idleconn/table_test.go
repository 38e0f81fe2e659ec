package idleconn

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestSlotLayout checks the layout the data path relies on: a slot per two
// cache lines, in chunks the allocator aligns to pages, with what the data
// path touches in the first line.
func TestSlotLayout(t *testing.T) {
	require.Equal(t, uintptr(128), unsafe.Sizeof(slot{}))
	var s0 slot
	for _, off := range []uintptr{unsafe.Offsetof(s0.owner), unsafe.Offsetof(s0.last), unsafe.Offsetof(s0.stall)} {
		require.LessOrEqual(t, off+8, uintptr(64))
	}
	var tab fdTable
	require.Nil(t, tab.lookup(5))
	s := tab.get(5000)
	require.Zero(t, uintptr(unsafe.Pointer(s))%128)
	require.Same(t, s, tab.lookup(5000))
	require.Nil(t, tab.lookup(5), "chunks are made only for descriptors in use")
	require.Nil(t, tab.lookup(-1))
	require.Same(t, tab.get(5), tab.lookup(5))
	require.Same(t, s, tab.lookup(5000), "growing the directory keeps the chunks")
	tab.reset()
	require.Nil(t, tab.lookup(5000))
}

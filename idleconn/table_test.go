package idleconn

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestSlotLayout checks the layout the data path relies on: a slot per
// cache line holding all it touches, in chunks the allocator aligns to
// pages, and a connection's limits in a line of their own.
func TestSlotLayout(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(slot{}), "the data path's line")
	require.Equal(t, uintptr(128), unsafe.Sizeof(limits{}), "the limits' two lines")
	ch := newChunk()
	require.Same(t, &ch.lims[7], ch.slots[7].lim())
	require.Same(t, &ch.lims[1023], ch.slots[1023].lim())
	require.Same(t, &ch.links[0], ch.slots[0].link())
	require.Same(t, &ch.links[1023], ch.slots[1023].link())
	var tab fdTable
	require.Nil(t, tab.lookup(5))
	s := tab.get(5000)
	require.Zero(t, uintptr(unsafe.Pointer(s))%64)
	require.Zero(t, uintptr(unsafe.Pointer(s.lim()))%64)
	require.Same(t, s, tab.lookup(5000))
	require.Nil(t, tab.lookup(5), "chunks are made only for descriptors in use")
	require.Nil(t, tab.lookup(-1))
	require.Same(t, tab.get(5), tab.lookup(5))
	require.Same(t, s, tab.lookup(5000), "growing the directory keeps the chunks")
	tab.reset()
	require.Nil(t, tab.lookup(5000))
}

// TestDocTable checks that the package documentation's table of limits
// has each kind's line, in the registry's order: a kind declares its line
// with the rest of it.
func TestDocTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var rows []string
	in := false
	for line := range strings.Lines(string(src)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "//\tlimit "):
			in = true
		case in && strings.HasPrefix(line, "//\t"):
			rows = append(rows, strings.TrimPrefix(line, "//\t"))
		case in:
			in = false
		}
	}
	var want []string
	for _, k := range kinds {
		want = append(want, strings.TrimRight(fmt.Sprintf("%-22s%-29s%-22s%s", k.row[0], k.row[1], k.row[2], k.row[3]), " "))
	}
	require.Equal(t, want, rows)
}

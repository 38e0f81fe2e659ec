package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReferencePeakIsItsOwn runs a stand-in reference, a shell script, as
// the report runs Ratas's, and checks that its peak RSS is the script's,
// a few MB at most, not this test process's: the child's ru_maxrss, which
// the report read before, counts the memory of the process that started
// it, and the test holds more than the script ever does.
func TestReferencePeakIsItsOwn(t *testing.T) {
	if _, err := os.Stat(gnuTime); err != nil {
		t.Skipf("no GNU time at %s: %v", gnuTime, err)
	}
	ballast := make([]byte, 64<<20) // this process's peak, well above a shell's
	for i := range ballast {
		ballast[i] = 1
	}
	script := filepath.Join(t.TempDir(), "reference")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	line, err := runReference(script, 1000)
	require.NoError(t, err)
	f := strings.Fields(line)
	require.Len(t, f, 7, line)
	require.Equal(t, "wheel="+referenceImpl, f[3])
	rss, err := strconv.ParseFloat(strings.TrimPrefix(f[6], "rss_mb="), 64)
	require.NoError(t, err, line)
	require.Greater(t, rss, 0.0, line)
	require.Less(t, rss, 32.0, "the reference's peak counts this process's 64 MB: %s", line)
	_ = ballast[len(ballast)-1]
}

func TestParseTimeReport(t *testing.T) {
	cpu, rss, err := parseTimeReport("0.45 3628\n")
	require.NoError(t, err)
	require.Equal(t, 0.45, cpu)
	require.InDelta(t, 3.543, rss, 0.001)
	for _, bad := range []string{"", "0.45", "Command exited with non-zero status 1\n0.45 3628", "x 3628", "0.45 y"} {
		_, _, err := parseTimeReport(bad)
		require.Error(t, err, "%q", bad)
	}
}

package main

import (
	"fmt"
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
	script := standIn(t, 997, 22_886_312)
	line, err := runReference(script, 1000)
	require.NoError(t, err)
	f := strings.Fields(line)
	require.Len(t, f, 7, line)
	require.Equal(t, []string{"requested=1000", "pairs=997", "rx=22886312", "wheel=" + referenceImpl}, f[:4])
	rss, err := strconv.ParseFloat(strings.TrimPrefix(f[6], "rss_mb="), 64)
	require.NoError(t, err, line)
	require.Greater(t, rss, 0.0, line)
	require.Less(t, rss, 32.0, "the reference's peak counts this process's 64 MB: %s", line)
	_ = ballast[len(ballast)-1]
}

// standIn writes a stand-in for Ratas's test_benchmark: a shell script
// that prints what it prints, a line per deleted unit and the total rx on
// stdout, the count of work units on stderr.
func standIn(t *testing.T, pairs int, rx int64) string {
	script := filepath.Join(t.TempDir(), "reference")
	body := fmt.Sprintf("#!/bin/sh\necho 'delete 0, rx-count=0'\necho \"$0,$BENCH_PAIR_COUNT,yes,0.45,%d\"\n"+
		"echo '%d work units (%d timers)' >&2\n", rx, pairs, pairs*10)
	require.NoError(t, os.WriteFile(script, []byte(body), 0o755))
	return script
}

// TestReferenceChecksum checks that the report refuses a reference whose
// checksum is not the one its own runs must match, or which prints none.
func TestReferenceChecksum(t *testing.T) {
	if _, err := os.Stat(gnuTime); err != nil {
		t.Skipf("no GNU time at %s: %v", gnuTime, err)
	}
	_, err := runReference(standIn(t, 997, 22_886_313), 1000)
	require.ErrorContains(t, err, "checksum pairs=997 rx=22886313, want pairs=997 rx=22886312")
	_, err = runReference(standIn(t, 996, 22_886_312), 1000)
	require.ErrorContains(t, err, "checksum pairs=996")
	line, err := runReference(standIn(t, 5, 123), 7) // a pair count with no checksum on record
	require.NoError(t, err)
	require.Contains(t, line, "requested=7 pairs=5 rx=123 ")

	for _, c := range []struct{ stdout, stderr, want string }{
		{"a,1000,yes,0.4,12\n", "", "no count of work units"},
		{"", "997 work units (9970 timers)\n", "no rx"},
		{"delete 1, rx-count=3\nsummary\n", "997 work units\n", "no rx"},
		{"a,1000,yes,0.4,x\n", "997 work units\n", "no rx"},
	} {
		_, _, err := referenceChecksum(c.stdout, c.stderr)
		require.ErrorContains(t, err, c.want, "%q %q", c.stdout, c.stderr)
	}
	pairs, rx, err := referenceChecksum("delete 0, rx-count=0\np,1000,yes,0.48,22886312\n", "997 work units (9970 timers)\n")
	require.NoError(t, err)
	require.Equal(t, 997, pairs)
	require.Equal(t, int64(22_886_312), rx)
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

package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func newFlags() (*flag.FlagSet, *int) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, fs.Int("n", 1, "a number")
}

// TestParse checks that a positional argument is refused, which the flag
// package alone accepts while ignoring every flag after it.
func TestParse(t *testing.T) {
	fs, n := newFlags()
	require.NoError(t, Parse(fs, []string{"-n", "2"}))
	require.Equal(t, 2, *n)

	fs, n = newFlags()
	err := Parse(fs, []string{"extra", "-n", "3"})
	var usage UsageError
	require.ErrorAs(t, err, &usage)
	require.EqualError(t, err, `unexpected argument "extra": demo takes flags only (see -h), and flags after an argument would be ignored`)
	require.Equal(t, 1, *n, "the flag after the argument was not parsed")

	fs, _ = newFlags()
	require.ErrorAs(t, Parse(fs, []string{"-m"}), &usage)
	require.True(t, usage.printed)

	fs, _ = newFlags()
	require.ErrorIs(t, Parse(fs, []string{"-h"}), flag.ErrHelp)
}

// TestStatus checks the exit status of each kind of outcome and that a
// message is printed once, with the command's name.
func TestStatus(t *testing.T) {
	fs, _ := newFlags()
	flagErr := Parse(fs, []string{"-m"})
	for _, tc := range []struct {
		err    error
		status int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{flagErr, ExitUsage, ""}, // the flag package has said it
		{Usagef("-n %d: must be positive", -1), ExitUsage, "demo: -n -1: must be positive\n"},
		{errors.New("listen: address in use"), ExitFailure, "demo: listen: address in use\n"},
	} {
		var stderr strings.Builder
		require.Equal(t, tc.status, Status("demo", tc.err, &stderr), "%v", tc.err)
		require.Equal(t, tc.stderr, stderr.String(), "%v", tc.err)
	}
}

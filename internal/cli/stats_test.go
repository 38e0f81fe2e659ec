package cli

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStatsFlag checks what -stats takes: the default, any duration not
// negative, 0 among them (only the status line at a stop), and that a
// negative or malformed one is a bad command line.
func TestStatsFlag(t *testing.T) {
	parse := func(args ...string) (time.Duration, error) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		every := StatsFlag(fs, 5*time.Second)
		err := Parse(fs, args)
		return *every, err
	}
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 5 * time.Second},
		{[]string{"-stats", "0"}, 0},
		{[]string{"-stats", "0s"}, 0},
		{[]string{"-stats", "250ms"}, 250 * time.Millisecond},
	} {
		every, err := parse(tc.args...)
		require.NoError(t, err, "%q", tc.args)
		require.Equal(t, tc.want, every, "%q", tc.args)
	}
	for _, tc := range []struct{ arg, want string }{
		{"-1s", `invalid value "-1s" for flag -stats: must not be negative (0: only the last, at a stop)`},
		{"often", `invalid value "often" for flag -stats: want a duration, such as 5s`},
	} {
		_, err := parse("-stats", tc.arg)
		var usage UsageError
		require.ErrorAs(t, err, &usage, tc.arg)
		require.EqualError(t, err, tc.want)
	}
}

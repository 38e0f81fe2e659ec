package cli

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnsentFlag checks what -max-unsent takes and what it gives
// idleconn.Options.MaxUnsent: the default, 0 for the kernel's own bound,
// any count of bytes, and that a negative or malformed one is a bad
// command line.
func TestUnsentFlag(t *testing.T) {
	parse := func(args ...string) (int, string, error) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var maxUnsent int
		UnsentFlag(fs, &maxUnsent, 262144)
		err := Parse(fs, args)
		return maxUnsent, fs.Lookup("max-unsent").Value.String(), err
	}
	for _, tc := range []struct {
		args  []string
		want  int
		shown string
	}{
		{nil, 0, "262144"},
		{[]string{"-max-unsent", "0"}, -1, "0"},
		{[]string{"-max-unsent", "65536"}, 65536, "65536"},
	} {
		got, shown, err := parse(tc.args...)
		require.NoError(t, err, "%q", tc.args)
		require.Equal(t, tc.want, got, "%q", tc.args)
		require.Equal(t, tc.shown, shown, "%q", tc.args)
	}
	for _, tc := range []struct{ arg, want string }{
		{"-1", `invalid value "-1" for flag -max-unsent: must not be negative (0: the kernel's own bound)`},
		{"lots", `invalid value "lots" for flag -max-unsent: want a number of bytes`},
	} {
		_, _, err := parse("-max-unsent", tc.arg)
		var usage UsageError
		require.ErrorAs(t, err, &usage, tc.arg)
		require.EqualError(t, err, tc.want)
	}
}

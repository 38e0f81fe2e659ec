package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTiny runs a small demo to the end: every kind of client is served,
// silent ones are reaped as idle, trickling ones at MaxLifetime, and no
// active connection is wrongly closed.
func TestTiny(t *testing.T) {
	cfg, err := parseFlags([]string{"-chatty", "20", "-silent", "20", "-trickle", "10",
		"-timeout", "200ms", "-max-life", "500ms", "-duration", "1500ms", "-loops", "2"})
	require.NoError(t, err)
	var out bytes.Buffer
	res, err := run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	t.Log("\n" + out.String())
	require.Zero(t, res.wronglyClosed())
	require.Positive(t, res.byKind[silent].idle)
	require.Positive(t, res.byKind[trickle].lifetime)
	for k := range kinds {
		require.Positive(t, res.conns[k], "%v clients connected", k)
	}
	require.Contains(t, out.String(), "wrongly closed")
	require.Contains(t, out.String(), "wheel memory:")
}

// TestFlags checks that parseFlags refuses each bad value with an error
// that names the flag. TestUsage covers what fs.Parse refuses.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-wheel", "binary"}, `-wheel "binary": want hashed or hierarchical`},
		{[]string{"-timeout", "0s"}, "-timeout 0s: must be at least 1ms"},
		{[]string{"-timeout", "1s", "-max-life", "1s"}, "-max-life 1s: must be more than 2.25s, " +
			"as a chatty connection stays open up to 2 × -timeout plus a -timeout/4 send period"},
		// A chatty client may start its last exchange just before 2 ×
		// timeout and then wait a period: the limit itself is refused.
		{[]string{"-timeout", "1s", "-max-life", "2.25s"}, "-max-life 2.25s: must be more than 2.25s"},
		{[]string{"-timeout", "200ms", "-max-life", "450ms"}, "-max-life 450ms: must be more than 450ms"},
		{[]string{"-duration", "0s"}, "-duration 0s: must be positive"},
		{[]string{"-loops", "0"}, "-loops 0: must be at least 1"},
		{[]string{"-chatty", "-1"}, "-chatty -1: must not be negative"},
		{[]string{"-silent", "-1"}, "-silent -1: must not be negative"},
		{[]string{"-trickle", "-1"}, "-trickle -1: must not be negative"},
	} {
		_, err := parseFlags(tc.args)
		require.Error(t, err, "%q", tc.args)
		require.True(t, strings.HasPrefix(err.Error(), tc.want), "%q: %v", tc.args, err)
	}
	for _, args := range [][]string{
		{"-timeout", "1s", "-max-life", "2250000001ns"},
		{"-timeout", "200ms", "-max-life", "450000001ns"},
	} {
		_, err := parseFlags(args)
		require.NoError(t, err, "%q", args)
	}
	cfg, err := parseFlags(nil)
	require.NoError(t, err)
	require.Less(t, cfg.duration, 30*time.Second, "the default run is well under a minute")
}

// childEnv tells a copy of the test binary started by command to run main.
const childEnv = "IDLEDEMO_CHILD"

// command returns a command that runs a copy of this test binary as the
// idledemo command with args. test names the test function that starts
// it, which must call runChild first.
func command(t *testing.T, test string, args ...string) *exec.Cmd {
	// The context kills the child if the test ends before it does.
	cmd := exec.CommandContext(t.Context(), os.Args[0],
		append([]string{"-test.run=^" + test + "$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// runChild runs main, with the arguments command put after "--", and
// reports true if this process is such a child.
func runChild() bool {
	if os.Getenv(childEnv) != "1" {
		return false
	}
	os.Args = append([]string{"idledemo"}, flag.Args()...)
	main()
	return true
}

// TestUsage checks, in child processes, that a bad flag is reported once
// with a non-zero status and that -h prints the usage and exits 0. None of
// these cases starts the demo.
func TestUsage(t *testing.T) {
	if runChild() {
		return
	}
	for _, tc := range []struct {
		args   []string
		status int
		want   string // on stderr, exactly once
	}{
		{[]string{"-no-such-flag"}, 2, "flag provided but not defined: -no-such-flag"},
		{[]string{"-timeout", "soon"}, 2, `invalid value "soon" for flag -timeout`},
		{[]string{"-loops", "0"}, 2, "idledemo: -loops 0: must be at least 1"},
		{[]string{"-h"}, 0, "Usage of idledemo:"},
		{[]string{"-help"}, 0, "Usage of idledemo:"},
	} {
		var stdout, stderr strings.Builder
		cmd := command(t, "TestUsage", tc.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if tc.status == 0 {
			require.NoError(t, err, "%q: %s", tc.args, &stderr)
		} else {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%q", tc.args)
			require.Equal(t, tc.status, exit.ExitCode(), "%q: %s", tc.args, &stderr)
		}
		require.Equal(t, 1, strings.Count(stderr.String(), tc.want), "%q: stderr:\n%s", tc.args, &stderr)
		require.NotContains(t, stdout.String(), "server on", "%q", tc.args)
	}
}

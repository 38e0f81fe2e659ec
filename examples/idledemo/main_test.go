package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/cmdtest"
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

// TestUsage checks, in child processes, that a bad flag is reported once
// with a non-zero status and that -h prints the usage and exits 0. None of
// these cases starts the demo.
func TestUsage(t *testing.T) {
	if cmdtest.RunChild("idledemo", main) {
		return
	}
	cmdtest.CheckUsage(t, "TestUsage", "server on", []cmdtest.Usage{
		{Args: []string{"-no-such-flag"}, Status: 2, Stderr: "flag provided but not defined: -no-such-flag"},
		{Args: []string{"-timeout", "soon"}, Status: 2, Stderr: `invalid value "soon" for flag -timeout`},
		{Args: []string{"-loops", "0"}, Status: 2, Stderr: "idledemo: -loops 0: must be at least 1"},
		{Args: []string{"-h"}, Status: 0, Stderr: "Usage of idledemo:"},
		{Args: []string{"-help"}, Status: 0, Stderr: "Usage of idledemo:"},
	})
}

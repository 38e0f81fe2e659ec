package main

import (
	"bytes"
	"context"
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

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-wheel", "binary"},
		{"-timeout", "1s", "-max-life", "1s"},
		{"-duration", "0s"},
		{"-silent", "-1"},
	} {
		_, err := parseFlags(args)
		require.Error(t, err, "%q", args)
	}
	cfg, err := parseFlags(nil)
	require.NoError(t, err)
	require.Less(t, cfg.duration, 30*time.Second, "the default run is well under a minute")
}

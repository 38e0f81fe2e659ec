//go:build unix

package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
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
	res, err := demo(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	t.Log("\n" + out.String())
	require.Zero(t, res.closedEarly())
	require.Positive(t, res.byKind[silent].idle)
	require.Positive(t, res.byKind[trickle].lifetime)
	for k := range kinds {
		require.Positive(t, res.byKind[k].conns, "%v clients connected", k)
	}
	requireCountsAddUp(t, res)
	require.Contains(t, out.String(), "closed early")
	require.Len(t, progressLine.FindAllString(out.String(), -1), 2, "a line at 1s and one at the end, 1.5s")
	// What each row counts, from the run's own settings.
	require.Contains(t, out.String(), "each makes several connections in 1.5s:\n"+
		"  chatty   talk every 50ms and hang up after 400ms: about 4 connections each, closed by the client\n"+
		"  silent   say nothing: reaped idle after 200ms, about 8 each\n"+
		"  trickle  send a byte every 100ms: reaped at MaxLifetime, 500ms, about 3 each\n")
	require.Contains(t, out.String(), "wheel memory:")
	require.NotContains(t, out.String(), "note:", "127.0.0.10 and up are local on Linux")
}

// progressLine matches a progress line of the demo's output.
var progressLine = regexp.MustCompile(`(?m)^ *\d+\.\ds  open `)

// TestProgressTimes checks when the progress lines are due: each whole
// second before the end, and the end, once.
func TestProgressTimes(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want []time.Duration
	}{
		{10 * time.Second, []time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second,
			5 * time.Second, 6 * time.Second, 7 * time.Second, 8 * time.Second, 9 * time.Second, 10 * time.Second}},
		{1500 * time.Millisecond, []time.Duration{time.Second, 1500 * time.Millisecond}},
		{time.Second, []time.Duration{time.Second}},
		{400 * time.Millisecond, []time.Duration{400 * time.Millisecond}},
	} {
		require.Equal(t, tc.want, progressTimes(tc.d), "%v", tc.d)
	}
}

// slowTerminal is an output that takes longer than the interval between
// progress lines to show the first one, as a loaded machine may.
type slowTerminal struct {
	bytes.Buffer
	slept bool
}

func (w *slowTerminal) Write(p []byte) (int, error) {
	if !w.slept && progressLine.Match(p) {
		w.slept = true
		time.Sleep(1200 * time.Millisecond)
	}
	return w.Buffer.Write(p)
}

// TestProgressOncePerTime runs a demo whose progress loop falls behind:
// the line after the late one, the last, comes at once, and once. The
// demo once kept a ticker and a separate end-of-run cancel, and printed
// its last line twice when both were ready as the loop came back, as
// here half the time.
func TestProgressOncePerTime(t *testing.T) {
	cfg, err := parseFlags([]string{"-chatty", "4", "-silent", "4", "-trickle", "4",
		"-timeout", "200ms", "-max-life", "500ms", "-duration", "1500ms", "-loops", "1"})
	require.NoError(t, err)
	var out slowTerminal
	_, err = demo(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, progressLine.FindAllString(out.String(), -1), 2, out.String())
}

// requireCountsAddUp checks that every connection the server accepted is
// accounted for once, by how it ended.
func requireCountsAddUp(t *testing.T, res *results) {
	t.Helper()
	for k, kr := range res.byKind {
		require.Equal(t, kr.conns, kr.idle+kr.lifetime+kr.byClient, "%v: %+v", kind(k), kr)
	}
}

// TestFastTimeout runs the demo at the shortest timeout, where the
// clients, goroutines woken by timers every quarter of a millisecond,
// miss their schedule on a busy machine. A connection reaped after its
// client fell silent for a Timeout was rightly reaped: the run must not
// fail for it. Go's dialer also closes and redials a socket the server
// closed before the dial returned, so connections are counted where they
// are accepted, and every one must end once.
func TestFastTimeout(t *testing.T) {
	cfg, err := parseFlags([]string{"-chatty", "100", "-silent", "100", "-trickle", "50",
		"-timeout", "1ms", "-duration", "1s", "-loops", "2"})
	require.NoError(t, err)
	var out bytes.Buffer
	res, err := demo(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	t.Log("\n" + out.String())
	require.Zero(t, res.closedEarly())
	requireCountsAddUp(t, res)
	if behind := res.byKind[chatty].behind + res.byKind[trickle].behind; behind > 0 {
		require.Contains(t, out.String(), "behind: ")
	}
}

// TestSourceFallback makes the clients' own source addresses unusable, as
// on macOS, where only 127.0.0.1 is a loopback address: they must fall
// back to 127.0.0.1 and the server still tell their kinds apart.
func TestSourceFallback(t *testing.T) {
	cfg, err := parseFlags([]string{"-chatty", "4", "-silent", "4", "-trickle", "4",
		"-timeout", "100ms", "-max-life", "300ms", "-duration", "400ms", "-loops", "1"})
	require.NoError(t, err)
	cfg.firstSource = netip.MustParseAddr("192.0.2.1") // TEST-NET-1: never a local address
	var out bytes.Buffer
	res, err := demo(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "note: 192.0.2.1 and the addresses after it are not local here")
	for k := range kinds {
		require.Positive(t, res.byKind[k].conns, "%v clients connected", k)
	}
	require.Positive(t, res.byKind[silent].idle)
	requireCountsAddUp(t, res)
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
		{[]string{"-loops", "0"}, "-loops 0: must be between 1 and 256"},
		{[]string{"-loops", "257"}, "-loops 257: must be between 1 and 256"},
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
		{Args: []string{"-loops", "0"}, Status: 2, Stderr: "idledemo: -loops 0: must be between 1 and 256"},
		{Args: []string{"-loops", "1000"}, Status: 2, Stderr: "idledemo: -loops 1000: must be between 1 and 256, the most gnet runs\n"},
		{Args: []string{"-max-life", "500ms"}, Status: 2, Stderr: "idledemo: -max-life 500ms: must be more than 2.25s"},
		{Args: []string{"-wheel", "binary"}, Status: 2, Stderr: `idledemo: -wheel "binary"`},
		{Args: []string{"now", "-duration", "1ms"}, Status: 2, Stderr: `idledemo: unexpected argument "now"`},
		{Args: []string{"-h"}, Status: 0, Stderr: "Usage of idledemo:"},
		{Args: []string{"-help"}, Status: 0, Stderr: "Usage of idledemo:"},
	})
}

// lowerDescriptorLimit sets this process's descriptor limit to n and opens
// extra descriptors that it keeps: the state of a shell after ulimit -n n,
// with other files open.
func lowerDescriptorLimit(n uint64, extra int) {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		panic(err)
	}
	for range extra {
		// A raw descriptor: an *os.File would be closed by its finalizer.
		if _, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0); err != nil {
			panic(err)
		}
	}
}

// TestDescriptorLimit checks, in a child process, that a run needing more
// descriptors than the limit is refused up front as a bad command line,
// saying why.
func TestDescriptorLimit(t *testing.T) {
	if cmdtest.RunChild("idledemo", func() { lowerDescriptorLimit(256, 0); main() }) {
		return
	}
	cmdtest.CheckUsage(t, "TestDescriptorLimit", "server on", []cmdtest.Usage{
		{Args: []string{"-chatty", "0", "-silent", "200", "-trickle", "0", "-loops", "1"}, Status: 2,
			Stderr: "idledemo: 200 clients need about 434 file descriptors, two per connection (client and server ends) " +
				"and some for the event loops, more than the limit of 256: raise it with ulimit -n, or run fewer clients\n"},
	})
}

// TestServerStops checks, in a child process whose other open files leave
// too few descriptors for its clients, that the run stops at once and says
// it ran out of descriptors, rather than print "open 0" until the end:
// either a dial fails, or gnet stops the whole engine when an accept does.
func TestServerStops(t *testing.T) {
	if cmdtest.RunChild("idledemo", func() { lowerDescriptorLimit(256, 60); main() }) {
		return
	}
	var stdout, stderr strings.Builder
	cmd := cmdtest.Command(t, "TestServerStops",
		"-chatty", "0", "-silent", "100", "-trickle", "0", "-timeout", "5s", "-max-life", "20s", "-duration", "20s", "-loops", "1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout:\n%s", &stdout)
	require.Equal(t, 1, exit.ExitCode(), "stderr:\n%s", &stderr)
	require.Contains(t, stderr.String(), "ulimit -n is 256, and the clients alone need about 234")
	require.Less(t, time.Since(start), 10*time.Second, "the run went on after the failure")
	t.Logf("stderr:\n%s", &stderr)
}

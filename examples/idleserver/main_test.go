package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/stretchr/testify/require"
)

// lines returns a channel of r's lines, closed at EOF.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// waitLine returns the first line from ch that contains want.
func waitLine(t *testing.T, ch <-chan string, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-ch:
			require.True(t, ok, "output ended before a line with %q", want)
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("no line with %q", want)
		}
	}
}

// TestRun starts the server, checks that it echoes and closes an idle
// connection, and that it stops when its context is cancelled.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-timeout", "200ms", "-loops", "2", "-stats", "50ms"}, w)
		_ = w.Close()
	}()
	out := lines(r)
	addr := strings.TrimPrefix(waitLine(t, out, "listening on "), "listening on ")

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf))

	// Silent from now on: the server closes the connection.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(buf)
	require.ErrorIs(t, err, io.EOF)
	waitLine(t, out, "open 0  reaped 1 (idle 1, lifetime 0)")

	cancel()
	require.NoError(t, <-done)
	waitLine(t, out, "stopped")
}

// TestFlags checks that run refuses each bad value before serving, with
// an error that names the flag. TestUsage covers what fs.Parse refuses.
func TestFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-wheel", "binary"}, `-wheel "binary": want hashed or hierarchical`},
		{[]string{"-timeout", "0s"}, "-timeout 0s: must be at least 1ms"},
		{[]string{"-timeout", "999us"}, "-timeout 999µs: must be at least 1ms"},
		{[]string{"-max-life", "-1s"}, "-max-life -1s: must not be negative (0: no limit)"},
		{[]string{"-loops", "0"}, "-loops 0: must be at least 1"},
		{[]string{"-stats", "0s"}, "-stats 0s: must be positive"},
		{[]string{"-addr", "127.0.0.1"}, "listen on 127.0.0.1: address 127.0.0.1: missing port in address"},
		{[]string{"-addr", busy.Addr().String()}, "listen on " + busy.Addr().String() + ": bind: address already in use"},
	} {
		err := run(context.Background(), tc.args, io.Discard)
		require.EqualError(t, err, tc.want, "%q", tc.args)
	}
}

// TestUsage checks, in child processes, that a bad flag is reported once
// with a non-zero status and that -h prints the usage and exits 0.
func TestUsage(t *testing.T) {
	if cmdtest.RunChild("idleserver", main) {
		return
	}
	cmdtest.CheckUsage(t, "TestUsage", "listening on", []cmdtest.Usage{
		{Args: []string{"-no-such-flag"}, Status: 2, Stderr: "flag provided but not defined: -no-such-flag"},
		{Args: []string{"-timeout", "soon"}, Status: 2, Stderr: `invalid value "soon" for flag -timeout`},
		{Args: []string{"-loops", "0"}, Status: 1, Stderr: "idleserver: -loops 0: must be at least 1"},
		{Args: []string{"-h"}, Status: 0, Stderr: "Usage of idleserver:"},
		{Args: []string{"-help"}, Status: 0, Stderr: "Usage of idleserver:"},
	})
}

// TestSignal runs the command in a child process and stops it with
// SIGINT, as Ctrl-C would, and with SIGTERM, as a service manager would.
func TestSignal(t *testing.T) {
	if cmdtest.RunChild("idleserver", main) {
		return
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"SIGINT", syscall.SIGINT},
		{"SIGTERM", syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := cmdtest.Command(t, "TestSignal", "-addr", "127.0.0.1:0", "-loops", "1")
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			out := lines(stdout)
			waitLine(t, out, "listening on 127.0.0.1:")
			require.NoError(t, cmd.Process.Signal(tc.sig))
			waitLine(t, out, "open 0  reaped 0 (idle 0, lifetime 0)")
			waitLine(t, out, "stopped")
			require.NoError(t, cmd.Wait())
		})
	}
}

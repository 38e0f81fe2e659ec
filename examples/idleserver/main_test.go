package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

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

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-wheel", "binary"},
		{"-timeout", "0s"},
		{"-loops", "0"},
		{"-no-such-flag"},
	} {
		err := run(context.Background(), args, io.Discard)
		require.Error(t, err, "%q", args)
	}
}

// TestSignal runs the command in a child process and stops it with
// SIGTERM, as a service manager would.
func TestSignal(t *testing.T) {
	if os.Getenv("IDLESERVER_CHILD") == "1" {
		os.Args = []string{"idleserver", "-addr", "127.0.0.1:0", "-loops", "1"}
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignal$")
	cmd.Env = append(os.Environ(), "IDLESERVER_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	out := lines(stdout)
	waitLine(t, out, "listening on 127.0.0.1:")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitLine(t, out, "stopped")
	require.NoError(t, cmd.Wait())
}

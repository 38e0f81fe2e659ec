package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/stretchr/testify/require"
)

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
	out := cmdtest.Lines(r)
	addr := strings.TrimPrefix(cmdtest.WaitLine(t, out, "listening on "), "listening on ")

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
	cmdtest.WaitLine(t, out, "open 0  reaped 1 (idle 1, lifetime 0, write stall 0, output full 0, input full 0, shed 0, shutdown 0, over budget 0)  refused 0")

	cancel()
	require.NoError(t, <-done)
	cmdtest.WaitLine(t, out, "stopped")
}

// TestStatsOnlyAtStop checks that -stats 0 means what it does in
// httpserver: no status line while serving, and the last one at the stop.
// (idleserver once refused it.)
func TestStatsOnlyAtStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out strings.Builder
	done := make(chan error, 1)
	r, w := io.Pipe()
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-loops", "1", "-stats", "0"}, w)
		_ = w.Close()
	}()
	lines := cmdtest.Lines(r)
	out.WriteString(cmdtest.WaitLine(t, lines, "listening on ") + "\n")
	cancel()
	for line := range lines {
		out.WriteString(line + "\n")
	}
	require.NoError(t, <-done)
	require.Regexp(t, `^listening on 127\.0\.0\.1:\d+\n`+
		`open 0  reaped 0 \(idle 0, lifetime 0, write stall 0, output full 0, input full 0, shed 0, shutdown 0, over budget 0\)  refused 0\n`+
		`stopped\n$`, out.String())
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
		{[]string{"-write-stall", "-1s"}, "-write-stall -1s: must not be negative (0: no limit)"},
		{[]string{"-max-conns", "-1"}, "-max-conns -1: must not be negative (0: derived from ulimit -n)"},
		{[]string{"-timeout", "1s", "x"}, `unexpected argument "x": idleserver takes flags only (see -h), and flags after an argument would be ignored`},
		{[]string{"-loops", "0"}, "-loops 0: must be between 1 and 256, the most gnet runs"},
		{[]string{"-stats", "-1s"}, `invalid value "-1s" for flag -stats: must not be negative (0: only the last, at a stop)`},
		{[]string{"-max-output", "0"}, "-max-output 0: must be positive"},
		{[]string{"-max-input", "-1"}, "-max-input -1: must be positive"},
		{[]string{"-max-unsent", "-1"}, `invalid value "-1" for flag -max-unsent: must not be negative (0: the kernel's own bound)`},
		{[]string{"-drain", "-1s"}, "-drain -1s: must not be negative"},
		{[]string{"-budget", "-2"}, "-budget -2: want bytes, 0 for the default or -1 for none"},
		{[]string{"-overload", "1"}, "-overload 1: want a fraction of -max-conns above 0 and below 1 (0: off)"},
		{[]string{"-overload", "-0.5"}, "-overload -0.5: want a fraction of -max-conns above 0 and below 1 (0: off)"},
		{[]string{"-overload", "NaN"}, "-overload NaN: want a fraction of -max-conns above 0 and below 1 (0: off)"},
		{[]string{"-overload", "0.5", "-overload-floor", "1m"}, "-overload-floor 1m0s: must lie between 3.75s, the timeout's resolution, and -timeout 30s"},
		{[]string{"-overload", "0.5", "-timeout", "8s", "-overload-floor", "999ms"}, "-overload-floor 999ms: must lie between 1s, the timeout's resolution, and -timeout 8s"},
		{[]string{"-addr", "127.0.0.1"}, `invalid value "127.0.0.1" for flag -addr: want host:port, as in 127.0.0.1:9000 (missing port in address)`},
		{[]string{"-addr", "127.0.0.1:99999"}, `invalid value "127.0.0.1:99999" for flag -addr: port "99999": want a number from 0 to 65535 (0: any free port)`},
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
		{Args: []string{"-loops", "0"}, Status: 2, Stderr: "idleserver: -loops 0: must be between 1 and 256, the most gnet runs"},
		{Args: []string{"-max-conns", "-5"}, Status: 2, Stderr: "idleserver: -max-conns -5: must not be negative (0: derived from ulimit -n)"},
		{Args: []string{"-timeout", "1s", "extra"}, Status: 2, Stderr: `idleserver: unexpected argument "extra": idleserver takes flags only (see -h)`},
		{Args: []string{"-addr", "nonsense"}, Status: 2, Stderr: `invalid value "nonsense" for flag -addr: want host:port, as in 127.0.0.1:9000 (missing port in address)`},
		{Args: []string{"-addr", "127.0.0.1:99999"}, Status: 2, Stderr: `invalid value "127.0.0.1:99999" for flag -addr: port "99999": want a number`},
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
			out := cmdtest.Lines(stdout)
			cmdtest.WaitLine(t, out, "listening on 127.0.0.1:")
			require.NoError(t, cmd.Process.Signal(tc.sig))
			cmdtest.WaitLine(t, out, "open 0  reaped 0 (idle 0, lifetime 0, write stall 0, output full 0, input full 0, shed 0, shutdown 0, over budget 0)  refused 0")
			cmdtest.WaitLine(t, out, "stopped")
			require.NoError(t, cmd.Wait())
		})
	}
}

// TestDescriptorLimit runs the command in child processes with a low
// descriptor limit and dials more connections than it may hold. gnet's main
// reactor accepts every connection waiting before an event loop's OnOpen
// can refuse one, and an accept that fails for want of descriptors stops
// its whole engine, so a -max-conns above idleconn's DefaultMaxConns is
// refused at start-up as a bad command line, exit 2, saying why (1000 under a limit of 64, and
// 999999 under 20,000). With -max-conns 20 and a limit of 128, and with
// the derived default (-max-conns 0: 160 for a limit of 256, idleconn's
// DefaultMaxConns) and 200 dials, it refuses the excess and keeps serving.
func TestDescriptorLimit(t *testing.T) {
	if cmdtest.RunChild("idleserver", func() {
		n, err := strconv.ParseUint(os.Getenv("IDLESERVER_TEST_NOFILE"), 10, 64)
		if err != nil {
			panic(err)
		}
		lim := syscall.Rlimit{Cur: n, Max: n}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			panic(err)
		}
		main()
	}) {
		return
	}
	for _, tc := range []struct {
		maxConns, nofile string
		dials            int
		held             string // the status line once the excess is refused; "" if the engine stops
	}{
		{"1000", "64", 0, ""},
		{"999999", "20000", 0, ""},
		{"20", "128", 100, "open 20 "},
		{"0", "256", 200, "open 160 "},
	} {
		maxConns := tc.maxConns
		t.Run("max-conns="+maxConns, func(t *testing.T) {
			cmd := cmdtest.Command(t, "TestDescriptorLimit", "-addr", "127.0.0.1:0", "-loops", "1", "-stats", "50ms", "-max-conns", maxConns)
			cmd.Env = append(cmd.Env, "IDLESERVER_TEST_NOFILE="+tc.nofile)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			out := cmdtest.Lines(stdout)
			if tc.held == "" {
				err := cmd.Wait()
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit, "stderr: %s", &stderr)
				require.Equal(t, 2, exit.ExitCode())
				require.Contains(t, stderr.String(), "idleserver: idleconn: MaxConns "+maxConns+
					" must lie below the open-files limit (ulimit -n), "+tc.nofile+",")
				return
			}
			addr := strings.TrimPrefix(cmdtest.WaitLine(t, out, "listening on "), "listening on ")
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					_ = c.Close()
				}
			}()
			for range tc.dials {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					break // the engine stopped: nothing listens
				}
				conns = append(conns, c)
			}
			line := cmdtest.WaitLine(t, out, "refused ")
			for !strings.HasPrefix(line, tc.held) {
				line = cmdtest.WaitLine(t, out, "refused ")
			}
			// Still serving the connections it holds.
			_, err = conns[0].Write([]byte("ping"))
			require.NoError(t, err)
			buf := make([]byte, 4)
			_, err = io.ReadFull(conns[0], buf)
			require.NoError(t, err)
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			cmdtest.WaitLine(t, out, "stopped")
			require.NoError(t, cmd.Wait(), "stderr: %s", &stderr)
		})
	}
}

// TestUnsentBound sends 8 MiB and reads none of its echo, its receive
// buffer small, with -max-input high enough that nothing closes it: with
// -max-unsent (the default, 256 KiB) the kernel holds at most that much,
// and a segment, of the echo, as /proc/net/tcp shows from outside the
// server, and idleconn's output limit bounds the rest; with -max-unsent 0
// the kernel's send queue grows to what autotuning lets it, megabytes.
func TestUnsentBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_NOTSENT_LOWAT is set on Linux only")
	}
	w := cmdtest.UnsentWatch{Bound: 256 << 10, Slack: 64 << 10}
	for _, unsent := range []int{0, w.Bound} {
		ctx, cancel := context.WithCancel(context.Background())
		r, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-loops", "1", "-stats", "0", "-max-input", strconv.Itoa(64 << 20), "-max-unsent", strconv.Itoa(unsent)}, pw)
			_ = pw.Close()
		}()
		out := cmdtest.Lines(r)
		addr := strings.TrimPrefix(cmdtest.WaitLine(t, out, "listening on "), "listening on ")
		c := cmdtest.SendNeverRead(t, addr, 8<<20)
		w.Watch(t, addr, c.LocalAddr().String(), unsent > 0)
		c.Close()
		cancel()
		require.NoError(t, <-done)
	}
}

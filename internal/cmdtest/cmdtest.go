// Package cmdtest runs a command's real main in a copy of its test binary,
// so that the examples' tests can check what a user sees: exit status,
// stderr, and the response to signals.
package cmdtest

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// childLimit bounds a child's life: the longest child test takes seconds.
const childLimit = 2 * time.Minute

// childEnv marks a copy of a test binary started by Command.
const childEnv = "PACKWHEEL_CMDTEST_CHILD"

// Command returns a command that runs a copy of this test binary as the
// program, with args. test names the test function that starts it, which
// must begin with RunChild. The copy is killed if the test ends first, or
// after childLimit, so that a test waiting for a child that never exits
// fails instead of hanging.
func Command(t *testing.T, test string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(t.Context(), childLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0],
		append([]string{"-test.run=^" + test + "$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// RunChild runs main as the program name, with the arguments Command put
// after "--", and reports true, if this process is a copy that Command
// started; otherwise it reports false.
func RunChild(name string, main func()) bool {
	if os.Getenv(childEnv) != "1" {
		return false
	}
	os.Args = append([]string{name}, flag.Args()...)
	main()
	return true
}

// Usage is a command line and what the program must do with it.
type Usage struct {
	Args   []string
	Status int    // exit status
	Stderr string // must appear on stderr exactly once
}

// CheckUsage runs each command line through Command (test names the
// calling test, which must begin with RunChild) and checks its status and
// stderr, and that stdout never contains serving, which the program
// prints once it runs.
func CheckUsage(t *testing.T, test, serving string, cases []Usage) {
	for _, tc := range cases {
		var stdout, stderr strings.Builder
		cmd := Command(t, test, tc.Args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if tc.Status == 0 {
			require.NoError(t, err, "%q: %s", tc.Args, &stderr)
		} else {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%q", tc.Args)
			require.Equal(t, tc.Status, exit.ExitCode(), "%q: %s", tc.Args, &stderr)
		}
		require.Equal(t, 1, strings.Count(stderr.String(), tc.Stderr), "%q: stderr:\n%s", tc.Args, &stderr)
		require.NotContains(t, stdout.String(), serving, "%q", tc.Args)
	}
}

// Lines returns a channel of r's lines, closed at EOF.
func Lines(r io.Reader) <-chan string {
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

// WaitLine returns the first line from ch that contains want, failing t
// if the lines end or 10 s pass first.
func WaitLine(t *testing.T, ch <-chan string, want string) string {
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

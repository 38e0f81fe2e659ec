package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// binaries are the servers built for a run.
type binaries struct {
	httpserver, idleserver string
	rev                    string // what httpserver was built from
}

// repoRoot returns the root of the packwheel repository: the parent of
// the bench module this command belongs to.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if filepath.Base(filepath.Dir(mod)) != "bench" {
		return "", fmt.Errorf("run from the bench module's directory (go.mod is %q)", mod)
	}
	return filepath.Dir(filepath.Dir(mod)), nil
}

// build builds the example servers into dir: httpserver from rev if it is
// not empty (from a copy of the repository at rev, made with git archive),
// otherwise from the working tree.
func build(root, dir, rev string) (binaries, error) {
	b := binaries{httpserver: filepath.Join(dir, "httpserver"), idleserver: filepath.Join(dir, "idleserver")}
	src := root
	b.rev = "working tree at " + gitOutput(root, "describe", "--always")
	// Results files written by earlier runs do not make the code dirty.
	if gitOutput(root, "status", "--porcelain", "--", ".", ":!bench/results") != "" {
		b.rev += ", with changes not committed"
	}
	if rev != "" {
		src = filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return b, err
		}
		archive := exec.Command("sh", "-c", "git -C \"$1\" archive \"$2\" | tar -x -C \"$3\"", "sh", root, rev, src)
		if out, err := archive.CombinedOutput(); err != nil {
			return b, fmt.Errorf("git archive %s: %v: %s", rev, err, out)
		}
		b.rev = "revision " + gitOutput(root, "rev-parse", "--short", rev)
	}
	for _, cmd := range []*exec.Cmd{
		exec.Command("go", "build", "-o", b.httpserver, "./examples/httpserver"),
		exec.Command("go", "build", "-o", b.idleserver, "./examples/idleserver"),
	} {
		cmd.Dir = src
		if cmd.Args[len(cmd.Args)-1] == "./examples/idleserver" {
			cmd.Dir = root
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, out)
		}
	}
	return b, nil
}

func gitOutput(root string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// server is a server process started for a measurement.
type server struct {
	name   string
	cmd    *exec.Cmd
	addr   string        // host:port it listens on
	exited chan struct{} // closed when its stdout ends: it has exited
	status string        // its last status line (examples' "open N  reaped ..."), once exited is closed
	waited bool          // interrupt has run
	err    error         // what interrupt returned: Wait's error, with the exit status
}

// start runs bin with args, which must make it listen on 127.0.0.1, and
// waits for its "listening on ADDR" line.
func start(name, bin string, args ...string) (*server, error) {
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "listening on "); ok {
				lines <- addr
			}
			if strings.HasPrefix(line, "open ") {
				s.status = line
			}
		}
	}()
	select {
	case s.addr = <-lines:
		return s, nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-s.exited
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start", name)
	}
}

// startIdle starts a server as start does, lets it settle for a second
// and samples it: the idle figures a scenario's are measured against.
// On an error the server is stopped.
func startIdle(name, bin string, args ...string) (*server, proc, error) {
	srv, err := start(name, bin, args...)
	if err != nil {
		return nil, proc{}, err
	}
	time.Sleep(time.Second)
	idle, err := srv.sample()
	if err != nil {
		_ = srv.stop()
		return nil, proc{}, err
	}
	return srv, idle, nil
}

// stop stops s with SIGINT, as a user would, and waits for it. Once
// stopped, it does nothing.
func (s *server) stop() error {
	if s.waited {
		return s.err
	}
	_, err := s.interrupt()
	return err
}

// stopStatus stops s as stop does and returns its last status line, or
// "—" for a server that prints none.
func (s *server) stopStatus() (string, error) {
	if err := s.stop(); err != nil {
		return "", err
	}
	if s.status == "" {
		return "—", nil
	}
	return s.status, nil
}

// interrupt sends s SIGINT and waits for it to exit, at most 30 s before
// it is killed: it returns how long s took and the error of its Wait,
// which holds its exit status (exitStatus).
func (s *server) interrupt() (time.Duration, error) {
	began := time.Now()
	s.waited = true
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
		s.err = s.cmd.Wait()
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = s.cmd.Wait()
		s.err = fmt.Errorf("%s did not stop on SIGINT", s.name)
	}
	return time.Since(began), s.err
}

// exitStatus says how s exited, once stopped: its exit status, or why it
// has none.
func (s *server) exitStatus() string {
	var exit *exec.ExitError
	switch {
	case s.err == nil:
		return "0"
	case errors.As(s.err, &exit) && exit.ExitCode() >= 0:
		return fmt.Sprint(exit.ExitCode())
	}
	return s.err.Error()
}

// proc is what /proc says of a process at one moment.
type proc struct {
	rss, hwm int64         // VmRSS and VmHWM, in bytes
	fds      int           // open descriptors
	cpu      time.Duration // user and system time so far
}

// sample reads /proc for s's process.
func (s *server) sample() (proc, error) {
	var p proc
	pid := strconv.Itoa(s.cmd.Process.Pid)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return p, err
	}
	for line := range strings.Lines(string(status)) {
		for key, dst := range map[string]*int64{"VmRSS:": &p.rss, "VmHWM:": &p.hwm} {
			if v, ok := strings.CutPrefix(line, key); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				*dst = kb << 10
			}
		}
	}
	fds, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		return p, err
	}
	p.fds = len(fds)
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return p, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const clockTicks = 100 // USER_HZ on Linux
	p.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	return p, nil
}

// need installs Debian's package pkg, which provides tool, if tool is not
// on PATH. It says so on stderr; apt-get needs root.
func need(tool, pkg string) error {
	if _, err := exec.LookPath(tool); err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "httpload: installing %s (Debian package %s) with apt-get, as root\n", tool, pkg)
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", pkg}} {
		cmd := exec.Command("apt-get", args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_, err := exec.LookPath(tool)
	return err
}

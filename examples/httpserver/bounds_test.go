package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/stretchr/testify/require"
)

// The clients each of idleconn's bounds is for, against the server with
// its default flags (testConfig): answers that end their connection
// arrive whole, a client that pipelines and reads slowly cannot grow the
// server's output, one that floods input during a delayed answer is
// closed, a slow body is answered 408, and a graceful stop answers the
// requests in flight.

// TestCloseAnswersWhole has curl fetch 20 answers of 50 MB at once, each
// asking for the connection's close (HTTP/1.1 Connection: close, and
// HTTP/1.0) and read at 50 MB/s, so that the socket's buffers are full
// when the answer ends: every one arrives whole. With a plain close in
// place of CloseAfterFlush, gnet drops what the socket has not taken and
// this test fails (curl's exit 18, "transfer closed with bytes remaining").
func TestCloseAnswersWhole(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	if testing.Short() {
		t.Skip("1 GB over loopback")
	}
	_, addr := start(t, testConfig)
	const kb, clients = 50_000_000 / 1024, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"-sS", "-o", "/dev/null", "-w", "%{size_download} %{http_code}", "-H", "Connection: close", "--limit-rate", "50M"}
			if i%2 == 1 {
				args = append(args, "--http1.0")
			}
			out, err := exec.Command(curl, append(args, fmt.Sprintf("http://%s/big?kb=%d", addr, kb))...).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("client %d: %v: %s", i, err, out)
				return
			}
			if want := fmt.Sprintf("%d 200", kb<<10); string(out) != want {
				errs <- fmt.Errorf("client %d: got %q, want %q", i, out, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSlowPipeliningReader pipelines 1,000 requests for 1 MiB answers and
// reads 1 MiB/s: the server answers only as the client reads, so its
// pending output never passes the output bound (-max-output, 1 MiB) and
// no limit closes the client, which reads steadily. Before, the server
// wrote every answer at once and buffered what the client had not read:
// 1 GiB for this client.
func TestSlowPipeliningReader(t *testing.T) {
	t.Parallel()
	srv, addr := start(t, testConfig)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	_, err = io.WriteString(c, strings.Repeat("GET /big?kb=1024 HTTP/1.1\r\nHost: x\r\n\r\n", 1000))
	require.NoError(t, err)
	r := bufio.NewReaderSize(c, 64<<10)
	start := time.Now()
	var got int
	for time.Since(start) < 2*time.Second {
		n, err := r.Read(make([]byte, 64<<10))
		require.NoError(t, err)
		got += n
		if ahead := time.Duration(got)*time.Second/(1<<20) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	st := srv.h.Stats()
	require.Equal(t, 1, st.Tracked, "the reader is served")
	for _, why := range []idleconn.Reason{idleconn.OutputFull, idleconn.WriteStall, idleconn.SlowDrain} {
		require.Zero(t, st.Reaped(why), "%v", why)
	}
}

// TestInputFlood asks for a delayed answer, then sends junk as fast as
// the socket takes it: the server reads it (gnet cannot stop reading) and
// keeps it unread behind the request, until it passes -max-input and the
// connection is closed, reason input full. Before, nothing bounded it: a
// single connection grew the server by gigabytes.
func TestInputFlood(t *testing.T) {
	t.Parallel()
	srv, addr := start(t, testConfig)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /delay?ms=5000 HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	junk := make([]byte, 64<<10)
	sent := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); sent += len(junk) {
		if _, err := c.Write(junk); err != nil {
			break
		}
	}
	require.Eventually(t, func() bool { return srv.h.Stats().Reaped(idleconn.InputFull) == 1 }, 5*time.Second, 10*time.Millisecond)
	t.Logf("the client sent %d KiB before the close", sent>>10)
}

// TestSlowBody sends a head announcing a body, then a byte of it a
// second: the body deadline (-body-timeout) answers 408 and closes.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.bodyTimeout = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	c := dialSend(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
	go func() {
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if _, err := c.Write([]byte("c")); err != nil {
				return
			}
		}
	}()
	// The client writes on while the server closes: a byte the server has
	// not read when it closes, or one that arrives after, is answered with
	// a reset, which io.ReadAll reports once it has read what came before
	// (a failure of the whole suite under load, in 0.33 s): that is the
	// answer.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(c)
	if err != nil {
		require.ErrorIs(t, err, syscall.ECONNRESET, "the server did not close the connection")
	}
	got := string(b)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 408 Request Timeout\r\n"), got)
	require.EqualValues(t, 1, srv.h.Stats().Reaped(idleconn.Deadline))
}

// TestShutdownAnswersInFlight runs the command in a child process with
// 100 /delay requests in flight and stops it with SIGINT: every request
// is answered whole, with its connection's close, and the command prints
// "stopped" and exits 0. Before, SIGINT closed every connection within
// 50 ms, and no request was answered.
func TestShutdownAnswersInFlight(t *testing.T) {
	if cmdtest.RunChild("httpserver", main) {
		return
	}
	cmd := cmdtest.Command(t, "TestShutdownAnswersInFlight", "-addr", "127.0.0.1:0", "-loops", "2")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	out := cmdtest.Lines(stdout)
	addr := strings.TrimPrefix(cmdtest.WaitLine(t, out, "listening on "), "listening on ")
	const clients = 100
	var wg sync.WaitGroup
	sent := make(chan struct{}, clients)
	answers := make(chan string, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				answers <- err.Error()
				return
			}
			defer c.Close()
			_, err = io.WriteString(c, "GET /delay?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n")
			sent <- struct{}{}
			if err != nil {
				answers <- err.Error()
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(c)
			if err != nil {
				answers <- err.Error()
				return
			}
			answers <- string(b)
		}()
	}
	for range clients {
		<-sent
	}
	time.Sleep(100 * time.Millisecond) // every request read, none answered yet
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	wg.Wait()
	close(answers)
	answered := 0
	for a := range answers {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(a)), nil)
		require.NoError(t, err, "%q", a)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "hello\n", string(body))
		require.True(t, resp.Close, "the answer closes its connection")
		answered++
	}
	require.Equal(t, clients, answered)
	cmdtest.WaitLine(t, out, "stopped")
	require.NoError(t, cmd.Wait())
}

// TestResetMidAnswer has clients ask for a 1 MiB answer and reset the
// connection (a close with SO_LINGER 0) at once or after reading part of
// it, as slowhttptest's slow-read clients do when they give up: the
// server's write then fails and gnet closes the connection in the middle
// of the answer. Each time, another client on the server's one loop is
// answered at once, and in the end no connection is left. Before, the
// /big writer ignored a write's error and retried the closed connection
// forever, its loop at 100% CPU and every other client on it unanswered.
func TestResetMidAnswer(t *testing.T) {
	t.Parallel()
	srv, addr := startLoops(t, testConfig, 1)
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	buf := make([]byte, 16<<10)
	for i := range 100 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, "GET /big?kb=1024 HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		for range i % 4 { // 0-3 reads of up to 16 KiB
			_, err = c.Read(buf)
			require.NoError(t, err)
		}
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
		resp, err := probe.Get("http://" + addr + "/")
		require.NoError(t, err, "round %d: another client is not answered", i)
		resp.Body.Close()
	}
	require.Eventually(t, func() bool { return srv.h.Stats().Tracked == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestUnsentBound asks for a 16 MiB answer and reads none of it, its
// receive buffer small: with -max-unsent (the default, 256 KiB) the
// kernel holds at most that much, and a segment, unsent for it, as
// /proc/net/tcp shows from outside the server; the rest waits in gnet's
// buffer, under -max-output, or unwritten. With -max-unsent 0 the kernel
// holds more: what autotuning lets the send buffer grow to, which is what
// 1,000 such clients turned into 1.9 GiB of kernel memory
// (bench/results/httpserver-unsent.txt).
func TestUnsentBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_NOTSENT_LOWAT is set on Linux only")
	}
	t.Parallel()
	w := cmdtest.UnsentWatch{Bound: idleconn.DefaultMaxUnsent, Slack: 64 << 10}
	require.Zero(t, testConfig.maxUnsent, "the default")
	for _, unsent := range []int{-1, 0} { // -max-unsent 0, and the default
		cfg := testConfig
		cfg.maxUnsent = unsent
		_, addr := start(t, cfg)
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4<<10))
		_, err = io.WriteString(c, "GET /big?kb=16384 HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		w.Watch(t, addr, c.LocalAddr().String(), unsent == 0)
	}
}

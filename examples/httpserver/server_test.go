package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cli"
	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/packwheel/packwheel/internal/engine"
	"github.com/packwheel/packwheel/internal/gnetstop"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// testConfig is the flags' defaults, whose timeouts are long enough not
// to fire unless a test shortens them.
var testConfig = defaults

// start runs a server with two event loops on 127.0.0.1 for the test and
// returns its address.
func start(t *testing.T, cfg config) (*server, string) {
	return startLoops(t, cfg, 2)
}

// startLoops runs a server with loops event loops.
func startLoops(t *testing.T, cfg config, loops int) (*server, string) {
	t.Helper()
	srv, err := newServer(cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(srv.h, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(loops), gnet.WithReuseAddr(true),
			gnet.WithLogger(&engine.ErrorsOnly{}))
	}()
	var eng gnet.Engine
	select {
	case eng = <-srv.booted:
	case err := <-done:
		t.Fatalf("gnet.Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not start")
	}
	addr, err := engine.Addr(eng)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, gnetstop.Stop(ctx, eng, done))
	})
	return srv, addr.String()
}

// get makes a GET with client and reports the body and whether the
// connection was reused.
func get(t *testing.T, client *http.Client, url string) (string, bool) {
	t.Helper()
	var reused bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Date"))
	return string(body), reused
}

// TestKeepAlive uses Go's net/http client: requests share one connection,
// and once the server has closed it for idling, the next request comes on
// a fresh one.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.idleTimeout = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for i := range 5 {
		body, reused := get(t, client, "http://"+addr+"/")
		require.Equal(t, "hello\n", body)
		require.Equal(t, i > 0, reused, "request %d", i)
	}
	require.Eventually(t, func() bool { return srv.h.Stats().Reaped(idleconn.Idle) == 1 }, 3*time.Second, 10*time.Millisecond)
	body, reused := get(t, client, "http://"+addr+"/")
	require.Equal(t, "hello\n", body)
	require.False(t, reused, "a connection the server closed for idling was reused")
}

// TestPipelined sends three requests at once, the second answered after a
// delay, and reads the answers in order.
func TestPipelined(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /big?kb=1 HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /delay?ms=100 HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"+
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	r := bufio.NewReader(c)
	for _, want := range []struct {
		method string
		status int
		length int64
	}{{"GET", 200, 1024}, {"GET", 200, 6}, {"POST", 405, int64(len(notAllowed))}, {"HEAD", 200, 6}} {
		resp, err := http.ReadResponse(r, &http.Request{Method: want.method})
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, want.status, resp.StatusCode, want.method)
		require.Equal(t, want.length, resp.ContentLength, want.method)
		if want.method != "HEAD" {
			require.Len(t, body, int(want.length))
		}
	}
}

// dialSend connects to addr and sends req; the connection is closed when
// the test ends.
func dialSend(t *testing.T, addr, req string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	return c
}

// readAll reads what the server sends until it closes the connection.
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "the server did not close the connection")
	return string(b)
}

func TestBadRequestCloses(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	c := dialSend(t, addr, "garbage\r\n\r\nGET / HTTP/1.1\r\n\r\n")
	got := readAll(t, c)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 400 Bad Request\r\n"), got)
	require.Contains(t, got, "Connection: close\r\n")
	require.Equal(t, 1, strings.Count(got, "HTTP/1.1"), "answered past a bad request")
}

func TestConnectionClose(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n", // HTTP/1.0 without keep-alive
	} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, req)
		require.NoError(t, err)
		got := readAll(t, c)
		c.Close()
		require.True(t, strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n"), got)
		require.Contains(t, got, "Connection: close\r\n")
		require.True(t, strings.HasSuffix(got, "\r\n\r\nhello\n"), got)
	}
}

// TestDelayDoesNotBlock checks that /delay answers after its delay, and
// that another connection, on either loop, is answered meanwhile.
func TestDelayDoesNotBlock(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	began := time.Now()
	delayed := make(chan time.Duration, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/delay?ms=400")
		if err == nil {
			resp.Body.Close()
		}
		delayed <- time.Since(began)
	}()
	time.Sleep(50 * time.Millisecond)
	for range 4 { // new connections, spread over both loops
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		require.NoError(t, err)
		require.Contains(t, readAll(t, c), "hello\n")
		c.Close()
	}
	require.Less(t, time.Since(began), 400*time.Millisecond, "a delayed response held up the others")
	require.GreaterOrEqual(t, <-delayed, 400*time.Millisecond)
}

// TestSlowloris trickles a request head a byte at a time: the header
// deadline, not reset by the bytes, answers 408 and closes.
func TestSlowloris(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.headerTimeout = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	began := time.Now()
	closed := make(chan string, 1)
	go func() { b, _ := io.ReadAll(c); closed <- string(b) }()
	head := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
	var got string
	for i := 0; got == "" && i < len(head); i++ {
		if _, err := c.Write([]byte{head[i]}); err != nil {
			break
		}
		select {
		case got = <-closed:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got == "" {
		got = <-closed
	}
	elapsed := time.Since(began)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 408 Request Timeout\r\n"), got)
	require.GreaterOrEqual(t, elapsed, cfg.headerTimeout)
	require.Less(t, elapsed, cfg.headerTimeout+srv.h.Resolution()+time.Second)
	require.EqualValues(t, 1, srv.h.Stats().Reaped(idleconn.Deadline))
}

// TestWriteStall asks for a large answer and never reads: the server
// closes the connection at the write-stall timeout.
func TestWriteStall(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.writeStall = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	dialSend(t, addr, "GET /big?kb=65536 HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Eventually(t, func() bool { return srv.h.Stats().Reaped(idleconn.WriteStall) == 1 }, 5*time.Second, 10*time.Millisecond)
}

// TestCurl has curl make two requests on one connection.
func TestCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	_, addr := start(t, testConfig)
	cmd := exec.Command(curl, "-sS", "-v", "http://"+addr+"/", "http://"+addr+"/delay?ms=50")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	require.Equal(t, "hello\nhello\n", string(out))
	require.Regexp(t, `Re-?using existing connection`, stderr.String())
}

// TestUsage checks that a bad command line exits 2, with a message that
// says what is wrong with it.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-idle", "0s"}, "-idle 0s: must be at least 1ms"},
		{[]string{"-header-timeout", "1us"}, "-header-timeout 1µs: must be at least 1ms"},
		{[]string{"-write-stall", "-1s"}, "-write-stall -1s: must not be negative (0: no limit)"},
		{[]string{"extra"}, `unexpected argument "extra": httpserver takes flags only (see -h), and flags after an argument would be ignored`},
		{[]string{"-nethttp", "-max-conns", "5"}, "-nethttp: net/http has no -max-life, -max-conns, -max-unsent, -budget or -stats"},
		{[]string{"-stats", "-1s"}, `invalid value "-1s" for flag -stats: must not be negative (0: only the last, at a stop)`},
		{[]string{"-nethttp", "-stats", "1s"}, "-nethttp: net/http has no -max-life, -max-conns, -max-unsent, -budget or -stats"},
		{[]string{"-budget", "-2"}, "-budget -2: want bytes, 0 for the default or -1 for none"},
		{[]string{"-max-unsent", "-1"}, `invalid value "-1" for flag -max-unsent: must not be negative (0: the kernel's own bound)`},
		{[]string{"-nethttp", "-max-unsent", "0"}, "-nethttp: net/http has no -max-life, -max-conns, -max-unsent, -budget or -stats"},
		{[]string{"-nethttp", "-budget", "1000000"}, "-nethttp: net/http has no -max-life, -max-conns, -max-unsent, -budget or -stats"},
		{[]string{"-budget", "1000", "-addr", "127.0.0.1:0"}, "idleconn: Budget 1000 must be at least 98304, " +
			"what one connection may keep under pressure (MaxInput's floor and twice Output.High)"},
	} {
		err := run(context.Background(), tc.args, io.Discard)
		require.Equal(t, cli.ExitUsage, cli.Status("httpserver", err, io.Discard), "%v: %v", tc.args, err)
		require.EqualError(t, err, tc.msg, "%v", tc.args)
	}
}

// TestDelayOutlivesIdle asks for an answer that waits longer than the idle
// timeout: the idle timeout is off while a request is being answered, so
// the answer comes, and it counts again from the answer.
func TestDelayOutlivesIdle(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.idleTimeout = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	c := dialSend(t, addr, "GET /delay?ms=900 HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err, "the connection was closed while its answer waited")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	answered := time.Now()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle timeout did not close the connection after the answer")
	require.GreaterOrEqual(t, time.Since(answered), cfg.idleTimeout)
	require.EqualValues(t, 1, srv.h.Stats().Reaped(idleconn.Idle))
}

// TestHeadLimitAnySplit sends heads just under and just over maxHead,
// whole and in pieces: the limit is the same however the bytes arrive.
func TestHeadLimitAnySplit(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	for _, size := range []int{maxHead, maxHead + 1} {
		head := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: "
		head += strings.Repeat("a", size-len(head)-4) + "\r\n\r\n"
		require.Len(t, head, size)
		for _, pieces := range []int{1, 2, 5} {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			step := (len(head) + pieces - 1) / pieces
			for i := 0; i < len(head); i += step {
				_, err = io.WriteString(c, head[i:min(i+step, len(head))])
				require.NoError(t, err)
				time.Sleep(5 * time.Millisecond)
			}
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			want := http.StatusOK
			if size > maxHead {
				want = http.StatusRequestHeaderFieldsTooLarge
			}
			require.Equal(t, want, resp.StatusCode, "a %d-byte head in %d pieces", size, pieces)
			c.Close()
		}
	}
}

// TestRefusedGet503 fills the server to MaxConns: the next connection is
// told 503 before it is closed, not closed silently.
func TestRefusedGet503(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.maxConns = 2
	srv, addr := start(t, cfg)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range cfg.maxConns {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, c)
	}
	require.Eventually(t, func() bool { return srv.h.Stats().Tracked == cfg.maxConns }, 5*time.Second, 5*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	got := readAll(t, c)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 503 Service Unavailable\r\n"), got)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "server unavailable: too many connections or too much buffered, or stopping\n", string(body))
	require.True(t, resp.Close)
	require.EqualValues(t, 1, srv.h.Stats().Refused)
}

// TestBadValuesSayWhy checks that a 400 for a bad /delay or /big says
// which values are valid, and that /big is capped.
func TestBadValuesSayWhy(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct{ path, body string }{
		{"/delay?ms=-5", "ms must be a whole number of milliseconds from 0 to 10000\n"},
		{"/delay?ms=10001", "ms must be a whole number of milliseconds from 0 to 10000\n"},
		{"/delay?ms=soon", "ms must be a whole number of milliseconds from 0 to 10000\n"},
		{"/big?kb=65537", "kb must be a whole number of KiB from 0 to 65536\n"},
		{"/big?kb=1048576", "kb must be a whole number of KiB from 0 to 65536\n"},
	} {
		resp, err := client.Get("http://" + addr + tc.path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.path)
		require.Equal(t, tc.body, string(body), tc.path)
	}
}

// TestNoRetention has clients take large answers and then idle: once the
// answers are written, the server holds no buffer the size of one, either
// its own or gnet's (gnet's pools drop theirs at the next collections).
// It reads the whole heap, so it runs while the parallel tests wait.
func TestNoRetention(t *testing.T) {
	_, addr := start(t, testConfig)
	const clients, kb = 8, 16 << 10
	for range clients {
		c := dialSend(t, addr, "GET /big?kb="+strconv.Itoa(kb)+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		n, err := io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.EqualValues(t, kb<<10, n)
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	require.Less(t, ms.HeapAlloc, uint64(kb<<10), "the heap holds a large answer after all were written")
}

// TestHalfClose pins what gnet does when a client shuts its write side
// after a request (README.md, "gnet's events"): gnet closes the connection
// as soon as it reads the EOF, so an answer written in the same event is
// sent, and one that waits (/delay) is not.
func TestHalfClose(t *testing.T) {
	t.Parallel()
	_, addr := start(t, testConfig)
	for _, tc := range []struct {
		path     string
		answered bool
	}{{"/", true}, {"/delay?ms=50", false}} {
		c := dialSend(t, addr, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
		got := readAll(t, c)
		require.Equal(t, tc.answered, strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n"), "%s: %q", tc.path, got)
	}
}

// TestSignal runs the command in a child process: its first line is
// "listening on" (gnet's banner is not printed), and SIGINT stops it with
// "stopped" and status 0, in both its gnet and its net/http forms; the
// gnet form prints its status line first, with -stats at that interval
// too.
func TestSignal(t *testing.T) {
	if cmdtest.RunChild("httpserver", main) {
		return
	}
	const status = "open 0  reaped 0 (idle 0, deadline 0, write stall 0, slow drain 0, lifetime 0, output full 0, input full 0, linger 0, shed 0, shutdown 0, over budget 0)  refused 0"
	for _, args := range [][]string{{"-stats", "10ms"}, {"-nethttp"}} {
		cmd := cmdtest.Command(t, "TestSignal", append([]string{"-addr", "127.0.0.1:0", "-loops", "1"}, args...)...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		out := cmdtest.Lines(stdout)
		first := <-out
		require.True(t, strings.HasPrefix(first, "listening on 127.0.0.1:"), "%q: first line %q", args, first)
		addr := strings.TrimPrefix(first, "listening on ")
		resp, err := http.Get("http://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if args[0] == "-stats" {
			http.DefaultClient.CloseIdleConnections()
			cmdtest.WaitLine(t, out, status) // the client's close seen
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		if args[0] == "-stats" {
			cmdtest.WaitLine(t, out, status)
		}
		cmdtest.WaitLine(t, out, "stopped")
		require.NoError(t, cmd.Wait())
	}
}

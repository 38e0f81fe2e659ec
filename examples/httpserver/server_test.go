package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cli"
	"github.com/packwheel/packwheel/internal/engine"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// testConfig has every timeout long enough not to fire unless a test
// shortens it.
var testConfig = config{headerTimeout: 5 * time.Second, idleTimeout: time.Minute, writeStall: 10 * time.Second, timeouts: true}

// start runs a server on 127.0.0.1 for the test and returns its address.
func start(t *testing.T, cfg config) (*server, string) {
	t.Helper()
	srv, err := newServer(cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(srv.h, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(2), gnet.WithReuseAddr(true))
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
		require.NoError(t, eng.Stop(ctx))
		require.NoError(t, <-done)
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
	}{{"GET", 200, 1024}, {"GET", 200, 6}, {"POST", 405, 0}, {"HEAD", 200, 6}} {
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

// readAll reads what the server sends until it closes the connection.
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "the server did not close the connection")
	return string(b)
}

func TestBadRequestCloses(t *testing.T) {
	_, addr := start(t, testConfig)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "garbage\r\n\r\nGET / HTTP/1.1\r\n\r\n")
	require.NoError(t, err)
	got := readAll(t, c)
	require.True(t, strings.HasPrefix(got, "HTTP/1.1 400 Bad Request\r\n"), got)
	require.Contains(t, got, "Connection: close\r\n")
	require.Equal(t, 1, strings.Count(got, "HTTP/1.1"), "answered past a bad request")
}

func TestConnectionClose(t *testing.T) {
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
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
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
	cfg := testConfig
	cfg.writeStall = 300 * time.Millisecond
	srv, addr := start(t, cfg)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /big?kb=65536 HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.h.Stats().Reaped(idleconn.WriteStall) == 1 }, 5*time.Second, 10*time.Millisecond)
}

// TestCurl has curl make two requests on one connection.
func TestCurl(t *testing.T) {
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

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-idle", "0s"}, {"-header-timeout", "1us"}, {"-write-stall", "-1s"}, {"extra"}} {
		err := run(context.Background(), args, io.Discard)
		require.Equal(t, cli.ExitUsage, cli.Status("httpserver", err, io.Discard), "%v: %v", args, err)
	}
}

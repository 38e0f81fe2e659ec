package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/stretchr/testify/require"
)

// TestPressureCloses checks that under the memory budget's pressure an
// answer closes its connection (keep-alive off, Connection: close), and
// that keep-alive comes back once the pressure is gone: a client parks a
// /delay request behind 200 KiB of pipelined requests, over half a budget
// of 384 KiB, and the server's answers to another client say close until
// the parked one leaves.
func TestPressureCloses(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.budget = 384 << 10
	srv, addr := start(t, cfg)
	closes := func() bool {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.Close
	}
	require.False(t, closes(), "no pressure: keep-alive")

	park, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString("GET /delay?ms=10000 HTTP/1.1\r\nHost: x\r\n\r\n")
	for b.Len() < 200<<10 {
		b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	_, err = park.Write(b.Bytes())
	require.NoError(t, err)
	require.Eventually(t, srv.h.UnderPressure, 5*time.Second, time.Millisecond, "the parked input counted")
	require.True(t, closes(), "under pressure: Connection: close")

	require.NoError(t, park.Close())
	require.Eventually(t, func() bool { return !srv.h.UnderPressure() }, 5*time.Second, time.Millisecond)
	require.False(t, closes(), "pressure gone: keep-alive again")
	require.Zero(t, srv.h.Stats().Reaped(idleconn.OverBudget), "under the budget: nothing closed")
}

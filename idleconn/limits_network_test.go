package idleconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headerServer is a keep-alive request server in miniature: a request is
// a header ending in an empty line, answered with "ok\n". While a request
// is in progress its idle timeout is off and a header deadline runs,
// counted from its first byte and not reset by later ones; between
// requests the idle timeout is keepAlive. It echoes nothing else.
type headerServer struct {
	echoServer
	h         *Handler
	header    time.Duration
	keepAlive time.Duration
}

type headerState struct {
	buf     []byte
	started time.Time // of the request in progress; zero between requests
}

func (s *headerServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	_, a := s.echoServer.OnOpen(c)
	c.SetContext(&headerState{})
	return nil, a
}

func (s *headerServer) OnTraffic(c gnet.Conn) gnet.Action {
	st := c.Context().(*headerState)
	in, _ := c.Next(-1)
	if st.started.IsZero() {
		st.started = time.Now()
		s.h.SetIdleTimeout(c, 0)
		s.h.SetDeadline(c, st.started.Add(s.header))
	}
	st.buf = append(st.buf, in...)
	if i := bytes.Index(st.buf, []byte("\n\n")); i >= 0 {
		st.buf = st.buf[:copy(st.buf, st.buf[i+2:])]
		st.started = time.Time{}
		s.h.SetDeadline(c, time.Time{})
		s.h.SetIdleTimeout(c, s.keepAlive)
		_, _ = c.Write([]byte("ok\n"))
	}
	return gnet.None
}

// TestSlowloris checks that a client trickling a byte every 20ms, never
// ending its header, is closed at the header deadline, while a client
// that completes its requests is answered and then kept alive.
func TestSlowloris(t *testing.T) {
	const header = 300 * time.Millisecond
	s := &headerServer{header: header, keepAlive: 2 * time.Second}
	var mu sync.Mutex
	var reaped []time.Duration
	h, err := New(s, Options{Timeout: time.Second, Resolution: 20 * time.Millisecond, OnReap: func(c gnet.Conn, why Reason) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, Deadline, why)
		reaped = append(reaped, time.Since(c.Context().(*headerState).started))
	}})
	require.NoError(t, err)
	s.h = h
	addr := serve(t, &s.echoServer, h, 2)

	slow := dial(t, addr)
	slow.send(20 * time.Millisecond)
	good, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer good.Close()
	start := time.Now()
	for time.Since(start) < header+200*time.Millisecond {
		_, err := good.Write([]byte("GET / x\n\n"))
		require.NoError(t, err)
		buf := make([]byte, 3)
		_, err = io.ReadFull(good, buf)
		require.NoError(t, err)
		require.Equal(t, "ok\n", string(buf))
		time.Sleep(30 * time.Millisecond)
	}
	waitClosed(t, []*client{slow}, 2*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reaped, 1, "only the slowloris client")
	assert.GreaterOrEqual(t, reaped[0], header)
	assert.Less(t, reaped[0], header+h.Resolution()+100*time.Millisecond, "the slack allows for scheduling on a loaded machine")
	require.Equal(t, uint64(1), h.Stats().Reaped(Deadline))
}

// floodServer echoes, and records the most bytes ever pending on a
// connection.
type floodServer struct {
	echoServer
	maxPending atomic.Int64
}

func (s *floodServer) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	if p := int64(c.OutboundBuffered()); p > s.maxPending.Load() {
		s.maxPending.Store(p)
	}
	return gnet.None
}

// TestWriteStallNetwork checks that a client sending 256 KiB every 10ms
// and never reading what the server echoes is closed at the write stall
// timeout, with the server's pending bytes bounded by what that client
// sends in the timeout and its Resolution, while a client that reads is
// served.
func TestWriteStallNetwork(t *testing.T) {
	t.Parallel() // the pending bound allows a second of slack for a loaded machine
	const stall = 200 * time.Millisecond
	s := &floodServer{}
	var why atomic.Int64
	// Output far above what the stall lets pend: the stall closes it.
	h, err := New(s, Options{Timeout: 5 * time.Second, WriteStallTimeout: stall, Output: OutputLimit{Max: 1 << 30, High: 1 << 20, Low: 1 << 19},
		OnReap: func(_ gnet.Conn, r Reason) { why.Store(int64(r)) }})
	require.NoError(t, err)
	addr := serve(t, &s.echoServer, h, 2)

	reader := dial(t, addr) // drains all the server sends
	reader.send(5 * time.Millisecond)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	chunk := make([]byte, 256<<10)
	start := time.Now()
	var sent int
	for time.Since(start) < 5*time.Second {
		if _, err := conn.Write(chunk); err != nil {
			break // the server closed it
		}
		sent += len(chunk)
		time.Sleep(10 * time.Millisecond)
	}
	require.Less(t, time.Since(start), 5*time.Second, "the non-reading client was not closed")
	require.Equal(t, int64(WriteStall), why.Load())
	require.Equal(t, uint64(1), h.Stats().Reaped(WriteStall))
	require.False(t, reader.closed.Load(), "the reading client is served")
	// What the client sends in stall+Resolution, and a second of slack
	// for a loaded machine, besides what the kernel's buffers hold.
	bound := int64(len(chunk)) * int64((stall+h.Resolution()+time.Second)/(10*time.Millisecond))
	t.Logf("sent %d MiB, server pending at most %d MiB (bound %d MiB)", sent>>20, s.maxPending.Load()>>20, bound>>20)
	require.Positive(t, s.maxPending.Load(), "the server had data pending")
	require.LessOrEqual(t, s.maxPending.Load(), bound)
}

// TestMaxConnsFlood checks that MaxConns holds under a flood of dials while
// the connections already open keep being served.
func TestMaxConnsFlood(t *testing.T) {
	t.Parallel() // waits out a 2 s read deadline; it counts only its own server's events
	const maxConns, flood = 20, 300
	s := &echoServer{}
	var refused atomic.Int64
	h, err := New(s, Options{Timeout: 5 * time.Second, MaxConns: maxConns, OnRefuse: func(gnet.Conn) { refused.Add(1) },
		OnReap: func(c gnet.Conn, why Reason) { t.Errorf("reaped %d: %v", c.Fd(), why) }})
	require.NoError(t, err)
	addr := serve(t, s, h, 2)

	served := make([]net.Conn, 5)
	for i := range served {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		served[i] = c
	}
	// A dial returns before gnet has accepted: wait until the server
	// holds these, or the flood could overtake them.
	waitFor(t, 2*time.Second, "the served connections open", func() bool { return settled(h, len(served)) })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pings atomic.Int64
	for _, c := range served {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Write([]byte("ping")); err != nil {
					t.Errorf("write: %v", err)
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					t.Errorf("read: %v", err)
					return
				}
				pings.Add(1)
			}
		}()
	}
	var closedAtOnce atomic.Int64
	var dials sync.WaitGroup
	for range flood {
		dials.Add(1)
		go func() {
			defer dials.Done()
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				// EOF, or a reset when the kernel's accept queue
				// overflowed under the flood.
				closedAtOnce.Add(1)
			}
		}()
	}
	before := pings.Load()
	dials.Wait()
	close(stop)
	wg.Wait()
	require.Greater(t, pings.Load(), before, "the open connections were served during the flood")

	s.mu.Lock()
	peak := s.peak
	s.mu.Unlock()
	require.LessOrEqual(t, peak, maxConns, "never more than MaxConns open")
	require.Equal(t, uint64(refused.Load()), h.Stats().Refused)
	require.GreaterOrEqual(t, refused.Load(), int64(flood-maxConns+len(served)))
	require.GreaterOrEqual(t, closedAtOnce.Load(), int64(flood-maxConns+len(served)), "refused clients see their connection closed")
}

// TestCloseIdleNetwork checks that CloseIdle, called from the test's
// goroutine, closes exactly the connections idle for the duration given.
func TestCloseIdleNetwork(t *testing.T) {
	s := &echoServer{}
	h, err := New(s, Options{Timeout: time.Second})
	require.NoError(t, err)
	addr := serve(t, s, h, 2)
	var idle, busy []*client
	for range 4 {
		idle = append(idle, dial(t, addr))
		c := dial(t, addr)
		c.send(20 * time.Millisecond)
		busy = append(busy, c)
	}
	waitFor(t, 2*time.Second, "all open", func() bool { return settled(h, 8) })
	time.Sleep(200*time.Millisecond + 2*h.Resolution()) // idle for sure
	h.CloseIdle(200 * time.Millisecond)
	waitClosed(t, idle, 2*time.Second)
	time.Sleep(100 * time.Millisecond)
	for i, c := range busy {
		require.False(t, c.closed.Load(), "busy client %d closed", i)
	}
	require.Equal(t, uint64(4), h.Stats().Reaped(Shed))
	require.True(t, settled(h, 4))
}

// TestNoTicker checks that a server run without gnet.WithTicker reaps: the
// Handler's own driver wakes the loops.
func TestNoTicker(t *testing.T) {
	t.Parallel() // never early, and within 2 s
	s := &echoServer{}
	h, err := New(s, Options{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	addr := serve(t, s, h, 2) // no gnet.WithTicker
	start := time.Now()
	c := dial(t, addr)
	waitClosed(t, []*client{c}, 2*time.Second)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	require.Equal(t, uint64(1), h.Stats().Reaped(Idle))
	s.mu.Lock()
	require.Zero(t, s.ticks, "gnet's ticker never ran")
	s.mu.Unlock()
}

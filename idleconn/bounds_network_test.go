package idleconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real gnet servers on 127.0.0.1 under the clients each bound is for: a
// reader slower than the server writes, one that drains too slowly, a
// flood of input, a close after a large answer, and a shutdown with
// requests in flight.

// answerServer answers requests, each a line "N\n", with N KiB of 'x' and
// a newline, in order, however many are pipelined: the way a keep-alive
// protocol server answers. It writes only while Writable says so, a
// 64 KiB chunk at a time, and goes on from OnWritable, so its pending
// output stays near the high-water mark. With delay set an answer waits
// that long first, on a connection Timer; with whole set it writes each
// answer in one Write, as a naive server does; with closeAfter set the answer
// ends the connection (CloseAfterFlush), as every answer does once
// Shutdown has begun; with ignore set it reads nothing, as a server
// waiting on something else before it reads on. Like any keep-alive
// server it turns its idle timeout off while it answers, which marks the
// connection busy for Shutdown.
type answerServer struct {
	echoServer
	h          *Handler
	delay      time.Duration
	closeAfter bool
	ignore     bool
	whole      bool         // writes each answer at once, not as Writable allows
	delayOnly  int          // with delay set and this positive, only answers of this many KiB wait
	maxPending atomic.Int64 // the most output pending after a callback
	reasons    []Reason     // of the connections reaped, under mu
}

func (s *answerServer) onReap(_ gnet.Conn, why Reason) {
	s.mu.Lock()
	s.reasons = append(s.reasons, why)
	s.mu.Unlock()
}

func (s *answerServer) reaped() []Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reason(nil), s.reasons...)
}

// answer is the state of a connection's answer in progress.
type answer struct {
	left    int  // bytes of 'x' still to write
	active  bool // an answer is being written
	waiting bool // its delay runs
	timer   Timer
}

var answerChunk = bytes.Repeat([]byte{'x'}, 64<<10)

func (s *answerServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	_, a := s.echoServer.OnOpen(c)
	c.SetContext(&answer{})
	return nil, a
}

func (s *answerServer) OnTraffic(c gnet.Conn) gnet.Action {
	if !s.ignore {
		s.pump(c)
	}
	return gnet.None
}

// pump writes what it may of the answers c's requests ask for.
func (s *answerServer) pump(c gnet.Conn) {
	a := c.Context().(*answer)
	defer func() {
		p := int64(c.OutboundBuffered())
		for old := s.maxPending.Load(); p > old && !s.maxPending.CompareAndSwap(old, p); old = s.maxPending.Load() {
		}
	}()
	for !a.waiting && s.h.Writable(c) {
		switch {
		case a.left > 0 && s.whole:
			_, _ = c.Write(bytes.Repeat([]byte{'x'}, a.left))
			a.left = 0
		case a.left > 0:
			n := min(a.left, len(answerChunk))
			_, _ = c.Write(answerChunk[:n])
			a.left -= n
		case a.active:
			_, _ = c.Write([]byte{'\n'})
			a.active = false
			if s.closeAfter || s.h.ShuttingDown() {
				s.h.CloseAfterFlush(c)
				return
			}
			s.h.SetIdleTimeout(c, s.h.cfg.resolution*8)
		default:
			buf, _ := c.Peek(-1)
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				return
			}
			kb, err := strconv.Atoi(string(buf[:i]))
			_, _ = c.Discard(i + 1)
			if err != nil {
				_ = c.Close()
				return
			}
			a.left, a.active = kb<<10, true
			s.h.SetIdleTimeout(c, 0)
			if s.delay > 0 && (s.delayOnly == 0 || kb == s.delayOnly) {
				a.waiting = true
				s.h.ConnTimer(c, &a.timer, s.delay, 0, func(c gnet.Conn) {
					a.waiting = false
					s.pump(c)
				})
			}
		}
	}
}

// serveAnswers runs an answerServer with opts on two loops and returns it
// and its address.
func serveAnswers(t *testing.T, s *answerServer, opts Options) string {
	t.Helper()
	opts.OnWritable = s.pump
	opts.OnReap = s.onReap
	h, err := New(s, opts)
	require.NoError(t, err)
	s.h = h
	return serve(t, &s.echoServer, h, 2)
}

// readAnswers reads n answers of kb KiB each from r, at most rate bytes a
// second if rate is positive, and returns the error that stopped it.
func readAnswers(r io.Reader, n, kb, rate int) error {
	want := n * (kb<<10 + 1)
	buf := make([]byte, 16<<10)
	start := time.Now()
	for got := 0; got < want; {
		m, err := r.Read(buf[:min(len(buf), want-got)])
		got += m
		if err != nil {
			return fmt.Errorf("after %d of %d bytes: %w", got, want, err)
		}
		if rate > 0 {
			if ahead := time.Duration(got)*time.Second/time.Duration(rate) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
	}
	return nil
}

// TestSlowReaderNetwork checks that a client that pipelines far more
// requests than it reads cannot grow the server's pending output beyond
// its high-water mark and a chunk, while it reads slowly but steadily (it
// is not closed) and while a fast client's pipelined answers flow.
func TestSlowReaderNetwork(t *testing.T) {
	t.Parallel() // paced reads; its fast phase takes a tenth of the 2 s stall it must beat
	s := &answerServer{}
	out := OutputLimit{Max: 1 << 20, High: 64 << 10, Low: 32 << 10}
	addr := serveAnswers(t, s, Options{Timeout: 5 * time.Second, WriteStallTimeout: 2 * time.Second, Output: out})

	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	_ = slow.(*net.TCPConn).SetReadBuffer(64 << 10)
	// 2,000 answers of 64 KiB, 125 MiB, asked for at once; read at 2 MiB/s
	// for two seconds.
	_, err = slow.Write(bytes.Repeat([]byte("64\n"), 2000))
	require.NoError(t, err)
	require.NoError(t, readAnswers(slow, 64, 64, 2<<20))

	fast, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer fast.Close()
	start := time.Now()
	_, err = fast.Write(bytes.Repeat([]byte("256\n"), 400)) // 100 MiB
	require.NoError(t, err)
	require.NoError(t, readAnswers(fast, 400, 256, 0))
	t.Logf("fast reader: 100 MiB of pipelined answers in %v", time.Since(start))

	require.Empty(t, s.reaped(), "neither client is closed")
	pending := s.maxPending.Load()
	t.Logf("most output pending: %d KiB", pending>>10)
	require.LessOrEqual(t, pending, int64(out.High+len(answerChunk)+1))
}

// TestDrainRateNetwork checks that a client reading below MinDrainRate
// is closed, reason SlowDrain, after about a DrainWindow, while one
// reading as fast as it can is served.
func TestDrainRateNetwork(t *testing.T) {
	t.Parallel() // one reader drains at full speed, the other at a quarter of the rate asked
	s := &answerServer{}
	addr := serveAnswers(t, s, Options{Timeout: 10 * time.Second, Resolution: 100 * time.Millisecond, MinDrainRate: 256 << 10, DrainWindow: 500 * time.Millisecond})
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_ = conn.(*net.TCPConn).SetReadBuffer(64 << 10)
		_, err = conn.Write([]byte("8192\n")) // 8 MiB
		require.NoError(t, err)
		return conn
	}

	fast := dial()
	require.NoError(t, readAnswers(fast, 1, 8192, 0))
	_ = fast.Close()
	require.Empty(t, s.reaped())

	slow := dial()
	defer slow.Close()
	go func() { _ = readAnswers(slow, 1, 8192, 64<<10) }()
	// After a close the kernel still delivers what it holds, at the
	// reader's pace: the server's record says when it closed.
	waitFor(t, 10*time.Second, "the slow reader reaped", func() bool { return len(s.reaped()) > 0 })
	require.Equal(t, []Reason{SlowDrain}, s.reaped())
}

// TestInputFloodNetwork checks that a client sending faster than the
// server consumes (here, never) is closed, reason InputFull, once the
// unconsumed input passes MaxInput, and that what the server held stays
// near it.
func TestInputFloodNetwork(t *testing.T) {
	const maxInput = 256 << 10
	s := &answerServer{ignore: true}
	addr := serveAnswers(t, s, Options{Timeout: 10 * time.Second, MaxInput: maxInput})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	junk := make([]byte, 64<<10)
	sent := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, err := conn.Write(junk); err != nil {
			break
		}
		sent += len(junk)
	}
	waitFor(t, 5*time.Second, "the flood reaped", func() bool { return len(s.reaped()) > 0 })
	require.Equal(t, []Reason{InputFull}, s.reaped())
	t.Logf("sent %d KiB before the close", sent>>10)
	// What the kernel's buffers took besides: at most a few MiB here.
	require.Less(t, sent, 64<<20, "the flood went on")
}

// TestCloseAfterFlushNetwork checks that answers that end their
// connection arrive whole, followed by a clean end of stream, even when
// the client has sent more after its request: the lingering close shuts
// the write side and discards the rest, where a plain close (c.Close, or
// gnet.Close from OnTraffic) drops what the socket would not take at once
// and resets the connection, destroying the answer's unread tail: with
// one in place of CloseAfterFlush this test fails every run.
func TestCloseAfterFlushNetwork(t *testing.T) {
	t.Parallel() // its bounds are seconds long; it checks what arrives, not when
	s := &answerServer{closeAfter: true, whole: true}
	addr := serveAnswers(t, s, Options{Timeout: 5 * time.Second, WriteStallTimeout: 2 * time.Second,
		Output: OutputLimit{Max: 64 << 20, High: 64 << 20, Low: 1}})
	const kb = 8 << 10 // 8 MiB, more than the socket buffers hold
	for i := range 10 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		// The request; once the answer has begun, a second request the
		// server will not answer, which reaches its socket unread.
		_, err = conn.Write([]byte(strconv.Itoa(kb) + "\n"))
		require.NoError(t, err)
		head := make([]byte, 1<<20)
		_, err = io.ReadFull(conn, head)
		require.NoError(t, err)
		_, err = conn.Write([]byte("1\n"))
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond) // the server has written all it can
		require.NoError(t, readAnswers(conn, 1, kb-1<<10, 0), "answer %d", i)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(make([]byte, 1))
		require.Zero(t, n)
		require.ErrorIs(t, err, io.EOF, "answer %d: a clean end of stream", i)
		_ = conn.Close()
	}
	waitFor(t, 5*time.Second, "all closed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closes == 10
	})
	require.Empty(t, s.reaped(), "every peer closed first")
}

// TestGracefulShutdownNetwork checks Shutdown with requests in flight:
// every request is answered whole, connections opened meanwhile are
// refused, and Shutdown returns nil once all have closed.
func TestGracefulShutdownNetwork(t *testing.T) {
	t.Parallel() // a 300 ms delay to wait out; its bounds are seconds long
	s := &answerServer{delay: 300 * time.Millisecond}
	addr := serveAnswers(t, s, Options{Timeout: 5 * time.Second})
	const clients = 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	started := make(chan struct{}, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			_, err = conn.Write([]byte("16\n"))
			started <- struct{}{}
			if err == nil {
				err = readAnswers(conn, 1, 16, 0)
			}
			errs <- err
		}()
	}
	for range clients {
		<-started
	}
	waitFor(t, 5*time.Second, "all open", func() bool { return s.h.Stats().Tracked == clients })
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { done <- s.h.Shutdown(ctx) }()
	waitFor(t, time.Second, "shutting down", s.h.ShuttingDown)

	late, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = late.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF) || isReset(err), "refused: %v", err)
	_ = late.Close()

	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	require.Equal(t, uint64(1), s.h.Stats().Refused)
}

// isReset reports whether err is a connection reset.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Err != nil && (op.Err.Error() == "read: connection reset by peer" ||
		bytes.Contains([]byte(op.Err.Error()), []byte("reset")))
}

// TestBudgetNetwork checks that the budget bounds what all connections
// buffer together: 200 clients each park a request (its answer waits 10
// s) and pipeline 1 MiB of requests behind it, never reading, which their
// own limits (MaxInput 256 KiB) would let the server hold, 50 MiB in all,
// against a budget of 4 MiB. The server's total, sampled every
// millisecond, stays within a read per loop of the budget, the attackers
// are closed OverBudget, and a client that asks for answers and reads
// them is served throughout, from once half the budget is buffered.
func TestBudgetNetwork(t *testing.T) {
	const budget, attackers, parkKB = 4 << 20, 200, 7
	s := &answerServer{delay: 10 * time.Second, delayOnly: parkKB}
	addr := serveAnswers(t, s, Options{Timeout: 20 * time.Second, MaxInput: 256 << 10, Budget: budget})

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), s.h.Stats().Buffered))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	var finished atomic.Int32                                          // attackers done writing, or closed
	requests := bytes.Repeat([]byte(strconv.Itoa(parkKB)+"\n"), 8<<10) // 16 KiB
	for range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer conn.Close()
			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			defer finished.Add(1)
			for range 64 { // 1 MiB, never reading
				if _, err := conn.Write(requests); err != nil {
					return // closed by the server
				}
			}
			finished.Add(1)
			<-stop // held open, as an attacker would
			finished.Add(-1)
		}()
	}
	// The fair client is served under pressure: from half the budget, its
	// limits shrink as everyone's.
	waitFor(t, 10*time.Second, "half the budget buffered", func() bool { return s.h.Stats().Pressure >= 0.5 })
	fair, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer fair.Close()
	_ = fair.SetDeadline(time.Now().Add(20 * time.Second))
	for i := range 100 {
		_, err := fair.Write([]byte("64\n"))
		require.NoError(t, err, "fair request %d", i)
		require.NoError(t, readAnswers(fair, 1, 64, 0), "fair answer %d", i)
	}
	// The attackers' bytes have all reached the server, or their
	// connections are closed.
	waitFor(t, 10*time.Second, "the attack sent", func() bool { return finished.Load() == attackers })
	time.Sleep(100 * time.Millisecond) // what the kernel holds reaches gnet
	close(stop)
	wg.Wait()
	<-sampled

	st := s.h.Stats()
	over := 0
	for _, why := range s.reaped() {
		if why == OverBudget {
			over++
		}
	}
	t.Logf("peak buffered %d KiB against a budget of %d KiB; %d closed OverBudget of %d reaped, %d refused",
		peak.Load()>>10, budget>>10, over, len(s.reaped()), st.Refused)
	require.Positive(t, over, "the budget closed attackers")
	// Over by at most what each loop reads before its data path sees the
	// total past the budget: a step of 1/256 of it and a read of 64 KiB.
	require.LessOrEqual(t, peak.Load(), int64(budget+2*(budget/256+64<<10)), "the sum stays under the budget")
}

// TestMaxUnsentNetwork sends 8 MiB to an echo server and reads none of
// the echo, its receive buffer small, with the input and output bounds
// high enough that nothing closes it: with MaxUnsent's default the
// kernel holds at most 256 KiB, and a segment, of the echo, as
// /proc/net/tcp shows from outside the server, the rest waiting in gnet's
// buffer; with -1 the kernel's send queue grows to what autotuning lets
// it, megabytes.
func TestMaxUnsentNetwork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_NOTSENT_LOWAT is set on Linux only")
	}
	w := cmdtest.UnsentWatch{Bound: DefaultMaxUnsent, Slack: 64 << 10}
	for _, unsent := range []int{-1, 0} {
		s := &echoServer{}
		h, err := New(s, Options{Timeout: 30 * time.Second, MaxInput: 64 << 20, Output: OutputLimit{Max: 64 << 20, High: 64 << 10, Low: 32 << 10}, MaxUnsent: unsent})
		require.NoError(t, err)
		addr := serve(t, s, h, 1)
		c := cmdtest.SendNeverRead(t, addr, 8<<20)
		w.Watch(t, addr, c.LocalAddr().String(), unsent == 0)
		require.NoError(t, c.Close())
		s.stop()
	}
}

// TestSocketOptionsAllocs checks that the socket calls the package makes
// allocate nothing: the bound on unsent bytes, at every open of a TCP
// connection, the look at the kernel's send queue, when an idle timeout
// runs out (idleLook), and the reset, at the closes that make one
// (Reason).
func TestSocketOptionsAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, raw.Control(func(fd uintptr) {
		require.Zero(t, testing.AllocsPerRun(100, func() { boundUnsent(int(fd), DefaultMaxUnsent) }))
		require.Zero(t, testing.AllocsPerRun(100, func() { abortOnClose(int(fd)) }))
	}))
	if runtime.GOOS != "linux" {
		return
	}
	// The look at a send queue that holds output, so that it makes both
	// of its calls: a client writes more than the accepted side, which
	// reads nothing, has room for.
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	peer, err := ln.Accept()
	require.NoError(t, err)
	defer peer.Close()
	require.NoError(t, peer.(*net.TCPConn).SetReadBuffer(4<<10))
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(200*time.Millisecond)))
	_, _ = c.Write(make([]byte, 8<<20)) // until the deadline: the queue is full
	raw, err = c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, raw.Control(func(fd uintptr) {
		acked, queued := unreadQueue(int(fd))
		require.NotZero(t, queued, "the test would not make the look's second call")
		require.NotZero(t, acked)
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = unreadQueue(int(fd)) }))
	}))
}

// TestAbortFreesKernelMemory sends 8 MiB to an echo server and reads none
// of the echo, its receive buffer small, until the write stall closes it,
// or, with no write stall limit, the idle timeout with the echo pending in
// gnet's buffer; or 128 KiB, whose echo the server's kernel takes whole,
// until the idle timeout, started over once by its look at the kernel's
// queue (idleLook), closes it with gnet's buffer empty. Each time the
// kernel held the echo's unsent part for the server's socket, and once
// idleconn has closed it the socket is gone from /proc/net/tcp, reset,
// rather than left orphaned with that queue while the kernel retries
// sending to a peer that does not read (Reason).
func TestAbortFreesKernelMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/net/tcp")
	}
	for _, tc := range []struct {
		name string
		why  Reason
		opts Options
		sent int // what the client sends, and never reads the echo of
	}{
		{"write stall", WriteStall, Options{Timeout: 30 * time.Second, WriteStallTimeout: 300 * time.Millisecond}, 8 << 20},
		{"idle", Idle, Options{Timeout: 500 * time.Millisecond}, 8 << 20},
		{"idle, all output in the kernel", Idle, Options{Timeout: 500 * time.Millisecond}, 128 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &echoServer{}
			reaped := make(chan Reason, 1)
			var buffered atomic.Int64 // in gnet's buffer at the close
			opts := tc.opts
			opts.Resolution, opts.MaxInput = 100*time.Millisecond, 64<<20
			opts.Output = OutputLimit{Max: 64 << 20, High: 64 << 10, Low: 32 << 10}
			opts.OnReap = func(c gnet.Conn, why Reason) {
				buffered.Store(int64(c.OutboundBuffered()))
				reaped <- why
			}
			h, err := New(s, opts)
			require.NoError(t, err)
			addr := serve(t, s, h, 1)
			defer s.stop()
			local, remote := addr, cmdtest.SendNeverRead(t, addr, tc.sent).LocalAddr().String()
			require.Eventually(t, func() bool {
				q, ok := cmdtest.SendQueue(t, local, remote)
				return ok && q > 64<<10
			}, 5*time.Second, 10*time.Millisecond, "the kernel's send queue never filled: the test would show nothing")
			select {
			case why := <-reaped:
				require.Equal(t, tc.why, why)
			case <-time.After(5 * time.Second):
				t.Fatal("the connection was not closed")
			}
			if tc.sent < 8<<20 {
				require.Zero(t, buffered.Load(), "output was left in gnet's buffer: the case would not test the kernel's queue")
			}
			require.Eventually(t, func() bool {
				_, ok := cmdtest.SendQueue(t, local, remote)
				return !ok
			}, 2*time.Second, 10*time.Millisecond, "the server's socket is still there, its send queue with it")
		})
	}
}

// TestIdleKernelQueueReadSlowly sends an echo server 128 KiB, whose echo
// the server's kernel takes whole, and reads the echo at about 40 KiB/s,
// for several idle timeouts: each time the timeout runs out, the peer has
// acknowledged more of the kernel's queue since (idleLook), so the
// connection stays open; once the queue has drained, it closes plainly,
// and the client reads every byte and then the end of the stream, not a
// reset.
func TestIdleKernelQueueReadSlowly(t *testing.T) {
	const sent = 128 << 10
	s := &echoServer{}
	reaped := make(chan Reason, 1)
	h, err := New(s, Options{Timeout: 500 * time.Millisecond, Resolution: 100 * time.Millisecond,
		OnReap: func(_ gnet.Conn, why Reason) { reaped <- why }})
	require.NoError(t, err)
	addr := serve(t, s, h, 1)
	defer s.stop()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4<<10))
	_, err = c.Write(make([]byte, sent))
	require.NoError(t, err)
	began := time.Now()
	got := 0
	buf := make([]byte, 4<<10)
	for time.Since(began) < 20*time.Second {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := c.Read(buf)
		got += n
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "after %d bytes in %v", got, time.Since(began))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(began)
	require.Equal(t, sent, got, "the echo, whole")
	require.Greater(t, took, 4*500*time.Millisecond, "the read lasted several idle timeouts: the test would show nothing")
	require.Equal(t, Idle, <-reaped)
}

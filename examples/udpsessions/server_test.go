package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/packwheel/packwheel"
	"github.com/packwheel/packwheel/internal/cmdtest"
	"github.com/packwheel/packwheel/internal/monoskew"
	"github.com/packwheel/packwheel/internal/stall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	timeout    = 100 * time.Millisecond
	resolution = 20 * time.Millisecond
	// interval is how often peers send while they talk, well under
	// timeout/2.
	interval = 10 * time.Millisecond
	// jitter allows for the work between a packet's stamp and the
	// server's line: a send, a read, a print. Time the process spends
	// without a CPU is measured (stall.Probe) and allowed on top.
	jitter = 5 * time.Millisecond
)

// line is one line the server printed, stamped when it was written.
type line struct {
	at   time.Time
	text string
}

// recorder is the server's output: it passes each line to the test as it
// is written, so that the time of an expiry can be measured.
type recorder chan line

func (r recorder) Write(p []byte) (int, error) {
	at := time.Now()
	for text := range strings.Lines(string(p)) {
		r <- line{at, strings.TrimSuffix(text, "\n")}
	}
	return len(p), nil
}

// peer is a loopback client of the server.
type peer struct {
	conn  *net.UDPConn
	addr  netip.AddrPort
	first time.Time // when it first sent
	last  time.Time // when it last sent
}

// dial opens a client socket to the server, closed when the test ends.
func dial(t *testing.T, server netip.AddrPort) *peer {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &peer{conn: conn, addr: conn.LocalAddr().(*net.UDPAddr).AddrPort()}
}

// talk sends n packets interval apart, or until stop is closed when n is 0.
// It runs in its own goroutine, so it reports failures with assert.
func (p *peer) talk(t *testing.T, n int, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; n == 0 || i < n; i++ {
		if i > 0 {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
		// Stamped before sending, so the server sees the packet later.
		p.last = time.Now()
		if i == 0 {
			p.first = p.last
		}
		_, err := p.conn.Write([]byte("ping"))
		if !assert.NoError(t, err) {
			return
		}
	}
}

// TestSessionsExpire drives the server with real packets: silent peers
// talk for a while and stop, chatty peers talk for many timeouts before
// they stop too. Every session must expire exactly once, never before
// timeout has passed since its peer's last packet, and at most a resolution
// later, give or take a few milliseconds of work and any time the process
// was starved of a CPU.
func TestSessionsExpire(t *testing.T) {
	for _, wheel := range []string{"hashed", "hierarchical"} {
		t.Run(wheel, func(t *testing.T) {
			probe := stall.Watch(t)
			late := runPeers(t, wheel, probe)
			slices.Sort(late)
			median, worst := late[len(late)/2], late[len(late)-1]
			t.Logf("%d expiries after timeout %v at resolution %v: late by %v min, %v median, %v worst",
				len(late), timeout, resolution, late[0], median, worst)
			assert.GreaterOrEqual(t, late[0], time.Duration(0), "a session expired early")
			assert.LessOrEqual(t, worst, resolution+jitter+probe.Worst())
		})
	}
}

// runPeers runs a server with the wheel against silent and chatty peers
// until every session has expired, and returns how late each expired,
// past timeout after its peer's last packet.
func runPeers(t *testing.T, wheel string, probe *stall.Probe) []time.Duration {
	out := make(recorder, 100)
	s, err := listen(config{addr: "127.0.0.1:0", timeout: timeout, resolution: resolution, wheel: wheel}, out)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx) }()

	server := s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	var peers []*peer
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Silent peers send 1 to 8 packets, so their sessions are pushed back
	// a different number of times before they expire; chatty ones send
	// until stop. Their starts are spread over a resolution so that their
	// deadlines fall at different points of a tick.
	const silent, chatty = 8, 3
	for i := range silent + chatty {
		p := dial(t, server)
		peers = append(peers, p)
		n := i + 1
		if i >= silent {
			n = 0
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * resolution / (silent + chatty))
			p.talk(t, n, stop)
		}()
	}
	time.Sleep(6 * timeout)
	close(stop)
	wg.Wait()

	// Every session opens once and expires once; a chatty one that expired
	// while it talked would open twice.
	opened := map[netip.AddrPort]bool{}
	expired := map[netip.AddrPort]time.Time{}
	giveUp := time.After(time.Second + timeout)
	for len(expired) < len(peers) {
		select {
		case l := <-out:
			kind, addr, count := parse(t, l.text)
			switch kind {
			case "new":
				if opened[addr] && probe.Worst() >= timeout-interval {
					t.Skipf("the process stalled for %v, longer than a chatty peer's silence may last: "+
						"%v rightly expired while its peer talked", probe.Worst(), addr)
				}
				require.False(t, opened[addr], "%v reopened: it expired while its peer talked", addr)
				opened[addr] = true
			case "expired":
				expired[addr] = l.at
			}
			require.Equal(t, len(opened)-len(expired), count, l.text)
		case <-giveUp:
			require.Failf(t, "sessions did not expire", "%d of %d expired", len(expired), len(peers))
		}
	}

	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(time.Second):
		require.Fail(t, "serve did not return after cancel")
	}

	var late []time.Duration
	for _, p := range peers {
		require.Contains(t, expired, p.addr)
		late = append(late, expired[p.addr].Sub(p.last)-timeout)
	}
	for _, p := range peers[silent:] {
		require.GreaterOrEqual(t, p.last.Sub(p.first), 5*timeout, "chatty peers outlive several timeouts")
	}
	return late
}

// parse splits a line such as "sessions=2 expired=127.0.0.1:5000".
func parse(t *testing.T, text string) (kind string, addr netip.AddrPort, count int) {
	fields := strings.Fields(text)
	require.Len(t, fields, 2, text)
	n, ok := strings.CutPrefix(fields[0], "sessions=")
	require.True(t, ok, text)
	count, err := strconv.Atoi(n)
	require.NoError(t, err, text)
	kind, a, ok := strings.Cut(fields[1], "=")
	require.True(t, ok, text)
	addr, err = netip.ParseAddrPort(a)
	require.NoError(t, err, text)
	return kind, addr, count
}

// TestRunStops checks that cancelling ctx interrupts a read that would
// otherwise wait maxWait for a packet.
func TestRunStops(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.NoError(t, run(ctx, []string{"-addr", "127.0.0.1:0", "-timeout", "1s", "-wheel", "hashed"}, &out))
	require.Less(t, time.Since(start), maxWait)
	require.Contains(t, out.String(), "listening on 127.0.0.1:")
}

// TestUsage checks, in child processes, the exit status and message of
// each kind of bad command line and of an address that cannot be had,
// that none of them starts the server, and that the usage names the
// program rather than the binary's path.
func TestUsage(t *testing.T) {
	if cmdtest.RunChild("udpsessions", main) {
		return
	}
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	cmdtest.CheckUsage(t, "TestUsage", "listening on", []cmdtest.Usage{
		{Args: []string{"-h"}, Status: 0, Stderr: "Usage of udpsessions:\n"},
		{Args: []string{"-no-such-flag"}, Status: 2, Stderr: "flag provided but not defined: -no-such-flag"},
		{Args: []string{"now", "-timeout", "0s"}, Status: 2, Stderr: `udpsessions: unexpected argument "now"`},
		{Args: []string{"-timeout", "0s"}, Status: 2, Stderr: "udpsessions: -timeout 0s: must be positive\n"},
		{Args: []string{"-resolution", "-1ms"}, Status: 2, Stderr: "udpsessions: -resolution -1ms: must be positive\n"},
		{Args: []string{"-wheel", "calendar"}, Status: 2, Stderr: `udpsessions: -wheel "calendar": want hashed or hierarchical`},
		{Args: []string{"-addr", "nonsense"}, Status: 2, Stderr: `invalid value "nonsense" for flag -addr: want host:port`},
		{Args: []string{"-addr", "127.0.0.1:bad"}, Status: 2, Stderr: `invalid value "127.0.0.1:bad" for flag -addr: port "bad": want a number from 0 to 65535`},
		// A well-formed address that cannot be had is a failure, not a usage error.
		{Args: []string{"-addr", busy.LocalAddr().String()}, Status: 1, Stderr: "udpsessions: listen udp " + busy.LocalAddr().String() + ": bind: address already in use\n"},
	})
}

// TestTouchAllocs checks that a packet from a known peer allocates
// nothing, whether it moves the session's timer or not.
func TestTouchAllocs(t *testing.T) {
	s, err := listen(config{addr: "127.0.0.1:0", timeout: timeout, resolution: resolution, wheel: "hierarchical"}, io.Discard)
	require.NoError(t, err)
	defer s.conn.Close()
	addr := netip.MustParseAddrPort("127.0.0.1:5000")
	now := time.Now()
	// Warm the wheel first: each slot of a hierarchical wheel's level 0
	// keeps its first chunk once it has held a timer (package packed),
	// so a session moving from tick to tick takes one in each of the 64.
	for range 2 * 64 {
		now = now.Add(resolution / 2)
		s.touch(addr, now)
	}
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(resolution / 2)
		s.touch(addr, now)
	})
	require.Zero(t, allocs)
}

// TestTouchFarFuture is `udpsessions -timeout 1200000h -resolution 1ns`:
// the session's deadline lies past the year 2157, where time.Time.Add
// drops the monotonic reading, and the first packet must not panic with a
// reversed range.
func TestTouchFarFuture(t *testing.T) {
	s, err := listen(config{addr: "127.0.0.1:0", timeout: 1_200_000 * time.Hour, resolution: time.Nanosecond, wheel: "hierarchical"}, io.Discard)
	require.NoError(t, err)
	defer s.conn.Close()
	origin, now := monoskew.Pair(t, 2*time.Nanosecond)
	s.clock = packwheel.NewClock(origin, time.Nanosecond)
	addr := netip.MustParseAddrPort("127.0.0.1:5000")
	for _, at := range []time.Time{now, now.Add(time.Nanosecond)} {
		s.touch(addr, at)
		earliest, latest := s.clock.Range(at, s.timeout)
		require.GreaterOrEqual(t, s.sessions[addr].timer.Deadline(), earliest)
		require.LessOrEqual(t, s.sessions[addr].timer.Deadline(), latest)
	}
}

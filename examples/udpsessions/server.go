package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/packwheel/packwheel"
)

// maxWait bounds a wait for packets when no session is due sooner:
// NextExpiry needs a limit, and a near one caps how many buckets the hashed
// wheel's NextExpiry may look at.
const maxWait = time.Second

// config is what the command line sets.
type config struct {
	addr       string
	timeout    time.Duration // silence after which a session expires
	resolution time.Duration // tick length: how late a session may expire, wake-ups aside
	wheel      string        // "hashed" or "hierarchical"
}

// session is the state kept per peer. It lives behind a pointer so that
// its Holder never moves while the wheel points at it.
type session struct {
	peer  netip.AddrPort
	timer packwheel.Holder
}

// server owns the socket, the session table and the wheel; only the
// goroutine running serve touches them.
type server struct {
	conn     *net.UDPConn
	timeout  time.Duration
	clock    packwheel.Clock
	timers   packwheel.Timers[*session]
	sessions map[netip.AddrPort]*session
	out      io.Writer
}

// start serves cfg, which parseFlags has checked, until ctx is done,
// printing to out.
func start(ctx context.Context, cfg config, out io.Writer) error {
	s, err := listen(cfg, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on %s wheel=%s timeout=%s resolution=%s\n",
		s.conn.LocalAddr(), cfg.wheel, cfg.timeout, cfg.resolution)
	return s.serve(ctx)
}

// listen binds cfg's address and sets up the server for cfg, which
// parseFlags has checked.
func listen(cfg config, out io.Writer) (*server, error) {
	var timers packwheel.Timers[*session] = new(packwheel.Wheel[*session])
	if cfg.wheel == "hashed" {
		timers = packwheel.NewHashed[*session](packwheel.HashedOptions{})
	}
	addr, err := net.ResolveUDPAddr("udp", cfg.addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, err
	}
	return &server{
		conn:     conn,
		timeout:  cfg.timeout,
		clock:    packwheel.NewClock(time.Now(), cfg.resolution),
		timers:   timers,
		sessions: make(map[netip.AddrPort]*session),
		out:      out,
	}, nil
}

// serve reads packets until ctx is done, then closes the socket. Each turn
// advances the wheel to the wall clock, expiring silent sessions, and then
// waits for a packet no longer than until the next expiry.
func (s *server) serve(ctx context.Context) error {
	defer s.conn.Close()
	// Closing the socket is what interrupts a blocked read.
	stop := context.AfterFunc(ctx, func() { s.conn.Close() })
	defer stop()

	expire := s.expire // bound once: a method value allocates
	buf := make([]byte, 2048)
	for {
		now := time.Now()
		s.timers.Advance(s.clock.Tick(now), expire)
		next := s.timers.NextExpiry(s.clock.Deadline(now, maxWait))
		peer, err := s.read(buf, now.Add(s.clock.Until(now, next)))
		switch {
		case err == nil:
			s.touch(peer, time.Now())
		case errors.Is(err, os.ErrDeadlineExceeded):
			// A timer is due: the next turn advances the wheel.
		case ctx.Err() != nil:
			return nil
		default:
			return err
		}
	}
}

// read waits until deadline for a packet and returns its sender. Only the
// sender matters: the payload is ignored.
func (s *server) read(buf []byte, deadline time.Time) (netip.AddrPort, error) {
	if err := s.conn.SetReadDeadline(deadline); err != nil {
		return netip.AddrPort{}, err
	}
	_, peer, err := s.conn.ReadFromUDPAddrPort(buf)
	return peer, err
}

// touch records a packet from peer at time now, opening its session if
// needed and pushing its expiry back to timeout after now.
func (s *server) touch(peer netip.AddrPort, now time.Time) {
	ss, ok := s.sessions[peer]
	if !ok {
		ss = &session{peer: peer}
		s.sessions[peer] = ss
		fmt.Fprintf(s.out, "sessions=%d new=%s\n", len(s.sessions), peer)
	}
	// Any tick from the first that begins after the timeout to the last
	// that begins within one resolution of it will do: the session never
	// expires early nor more than a resolution late, and a packet whose
	// range still holds the current deadline costs no wheel work. Range
	// reads now once: Tick(now.Add(timeout)) could measure a time past the
	// year 2157 on another clock than now (TestTouchFarFuture).
	earliest, latest := s.clock.Range(now, s.timeout)
	s.timers.ScheduleRange(&ss.timer, earliest, latest, ss)
}

// expire deletes a session whose timer fired.
func (s *server) expire(ss *session) {
	delete(s.sessions, ss.peer)
	fmt.Fprintf(s.out, "sessions=%d expired=%s\n", len(s.sessions), ss.peer)
}

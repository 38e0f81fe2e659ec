package packwheel_test

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/packwheel/packwheel"
)

// The Examples in this file are README.md's snippets, whole and runnable;
// TestReadmeSnippets checks that each snippet's lines are still here.

// conn is a caller's connection with its timer embedded.
type conn struct {
	fd    int
	timer packwheel.Holder // embedded by value; never copy while active
}

func closeConn(c *conn) { fmt.Println("closed fd", c.fd) }

// A hierarchical wheel, as README's "Using the wheels" first shows it:
// schedule, push back on each packet, advance once per tick.
func Example_usingTheWheel() {
	var w packwheel.Wheel[*conn] // the zero value is ready
	c := &conn{fd: 7}
	w.ScheduleAfter(&c.timer, 30_000, c)                         // fire 30,000 ticks from now
	w.ScheduleRange(&c.timer, w.Now()+30_000, w.Now()+31_000, c) // on each packet: nearly free
	for w.Len() > 0 {
		w.Advance(w.Now()+1, func(c *conn) { closeConn(c) }) // once per tick
	}
	fmt.Println("at tick", w.Now())
	// Output:
	// closed fd 7
	// at tick 30000
}

// The hashed wheel, as README's "Using the wheels" shows it: Cancel says
// whether the timer was active, and AppendExpired bounds a call's work.
func Example_usingTheHashedWheel() {
	c, d := &conn{fd: 7}, &conn{fd: 8}
	deadlineTick, nowTick, buf := uint64(5000), uint64(6000), make([]*conn, 0, 1000)
	w := packwheel.NewHashed[*conn](packwheel.HashedOptions{Slots: 4096})
	w.Schedule(&d.timer, deadlineTick, d)
	w.Schedule(&c.timer, deadlineTick, c)
	active := w.Cancel(&c.timer)                                 // false if it had fired, or was never scheduled
	expired, caughtUp := w.AppendExpired(buf[:0], nowTick, 1000) // at most 1000 fired or moved per call
	fmt.Println("cancelled an active timer:", active)
	fmt.Println("expired fd", expired[0].fd, "of", len(expired), "caught up:", caughtUp)
	// Output:
	// cancelled an active timer: true
	// expired fd 8 of 1 caught up: true
}

// udpSession is the state a UDP server keeps per peer.
type udpSession struct {
	peer  netip.AddrPort
	timer packwheel.Holder
}

// One goroutine owns a wheel and a UDP socket, as README's "Embedding a
// wheel in your own loop" shows: it reads with a deadline at the wheel's
// next expiry and expires a session after a silence. A peer on 127.0.0.1
// sends one packet; its session expires 50ms later and the loop ends.
func Example_embeddingAWheel() {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client, err := net.DialUDP("udp", nil, conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("hi")); err != nil {
		panic(err)
	}
	const timeout = 50 * time.Millisecond
	sessions := map[netip.AddrPort]*udpSession{}
	served := false
	sessionFor := func(peer netip.AddrPort) *udpSession {
		s, ok := sessions[peer]
		if !ok {
			s, served = &udpSession{peer: peer}, true
			sessions[peer] = s
			fmt.Println("new session, sessions:", len(sessions))
		}
		return s
	}
	buf := make([]byte, 1500)
	start := time.Now()

	clock := packwheel.NewClock(time.Now(), 10*time.Millisecond)
	var wheel packwheel.Wheel[*udpSession] // udpSession embeds a packwheel.Holder named timer
	for {
		now := time.Now()
		wheel.Advance(clock.Tick(now), func(s *udpSession) { delete(sessions, s.peer) })
		if served && len(sessions) == 0 {
			break // the example's end: its one session has expired
		}
		conn.SetReadDeadline(now.Add(clock.Until(wheel.NextExpiry(clock.Deadline(now, time.Second)), now)))
		if _, peer, err := conn.ReadFromUDPAddrPort(buf); err == nil {
			s := sessionFor(peer)                                // a map[netip.AddrPort]*udpSession
			earliest, latest := clock.Range(time.Now(), timeout) // never early, at most a tick late
			wheel.ScheduleRange(&s.timer, earliest, latest, s)
		}
	}
	fmt.Println("expired, sessions:", len(sessions), "after at least the timeout:", time.Since(start) >= timeout)
	// Output:
	// new session, sessions: 1
	// expired, sessions: 0 after at least the timeout: true
}
